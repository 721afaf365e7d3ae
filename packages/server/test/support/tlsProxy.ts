/**
 * What the deployment tests put around a TLS proxy (nginx, Caddy) in front of `agentwallet serve`: a generated
 * certificate, an https client that trusts it and connects from 127.0.0.2 (so its address is not the proxy's),
 * and stopping the proxy's process.
 */
import { type ChildProcess, execFileSync } from "node:child_process";
import { chmodSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Agent, fetch as tlsFetch } from "undici";

/** The address the https client connects from: loopback, but not the proxy's 127.0.0.1. */
export const CLIENT_ADDRESS = "127.0.0.2";

/** A self-signed certificate for 127.0.0.1 and localhost in `dir`; its key readable by a proxy's workers. */
export function selfSignedCertificate(dir: string): { cert: string; key: string } {
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], { stdio: "ignore" });
  chmodSync(key, 0o644);
  return { cert, key };
}

export type HttpsCall = (path: string, o?: { method?: string; auth?: string; body?: unknown; headers?: Record<string, string> }) => Promise<{ status: number; headers: Headers; json: any }>;

/** Requests to `base` over https, trusting `cert`, from CLIENT_ADDRESS; redirects are returned, not followed. */
export function httpsClient(base: string, cert: string): { call: HttpsCall; signInOperator(credential: string): Promise<Response> } {
  const dispatcher = new Agent({ connect: { ca: readFileSync(cert) }, localAddress: CLIENT_ADDRESS });
  const call: HttpsCall = async (path, o = {}) => {
    const res = await tlsFetch(`${base}${path}`, {
      method: o.method ?? (o.body === undefined ? "GET" : "POST"),
      headers: { ...(o.auth ? { authorization: `Bearer ${o.auth}` } : {}), ...(o.body === undefined ? {} : { "content-type": "application/json" }), ...o.headers },
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
      dispatcher,
      redirect: "manual",
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers as unknown as Headers, json: text.startsWith("{") ? JSON.parse(text) : undefined };
  };
  // The console's operator sign-in form, sent as a browser on the public address sends it (its Origin included).
  const signInOperator = async (credential: string) =>
    (await tlsFetch(`${base}/console/signin`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: base },
      body: new URLSearchParams({ kind: "operator", secret: credential }).toString(),
      dispatcher,
      redirect: "manual",
    })) as unknown as Response;
  return { call, signInOperator };
}

/** Stops a proxy started by the test (SIGTERM to its PID) and waits for it to exit. */
export async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}
