/**
 * Debian's nginx running the shipped deploy/nginx/agentwallet.conf on this machine, for the deployment tests and
 * the benches (`--behind nginx`): the file's replica ports, listen address and certificate swapped for local ones,
 * inside a main configuration whose pid file, logs and temporary files live in the caller's directory. nginx runs
 * in the foreground as a child process; tlsProxy.ts's `stopProcess` stops it by its PID.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join, resolve } from "node:path";

export const NGINX_BIN = "/usr/sbin/nginx";
const SHIPPED = resolve(import.meta.dirname, "../../../../deploy/nginx/agentwallet.conf");
const TEMP_DIRS = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"];
/** How long a started nginx may take to accept connections (a loaded two-core machine included). */
const LISTEN_WAIT_MS_MAX = 15_000;

/** Fails with the way to install nginx when it is missing: before a caller starts anything that needs it. */
export function requireNginx(): void {
  if (!existsSync(NGINX_BIN)) throw new Error(`nginx is missing at ${NGINX_BIN}: apt-get install -y nginx (.ci/run installs it)`);
}

export type ShippedSite = { listenPort: number; upstreamPorts: readonly [number, number]; cert: string; key: string };

/** deploy/nginx/agentwallet.conf with `site`'s ports and certificate; throws when the file lost a line swapped here. */
export function shippedNginxSite(site: ShippedSite): string {
  const swaps: [from: string, to: string][] = [
    ["server 127.0.0.1:8787 ", `server 127.0.0.1:${site.upstreamPorts[0]} `],
    ["server 127.0.0.1:8788 ", `server 127.0.0.1:${site.upstreamPorts[1]} `],
    ["listen 443 ssl http2;", `listen 127.0.0.1:${site.listenPort} ssl http2;`],
    ["/etc/letsencrypt/live/wallet.example.com/fullchain.pem", site.cert],
    ["/etc/letsencrypt/live/wallet.example.com/privkey.pem", site.key],
  ];
  let text = readFileSync(SHIPPED, "utf8");
  for (const [from, to] of swaps) {
    if (!text.includes(from)) throw new Error(`${SHIPPED} no longer contains "${from}": update test/support/nginx.ts to match it`);
    text = text.replace(from, to);
  }
  return text;
}

export type StartNginxOptions = {
  /** Where the configuration, pid file, error log and temporary files go; made readable by nginx's workers. */
  dir: string;
  /** Blocks for nginx's http context (`server { … }`, `upstream { … }`). */
  sites: string[];
  /** The ports the sites listen on (127.0.0.1): nginx is started once each accepts a connection. */
  listenPorts: number[];
  /** 1 unless given: "auto" is Debian's nginx.conf's (one per core). */
  workerProcesses?: number | "auto";
};

/** Writes `dir/nginx.conf` around the sites, checks it with `nginx -t`, starts nginx and waits until it listens. */
export async function startNginx(o: StartNginxOptions): Promise<ChildProcess> {
  requireNginx();
  chmodSync(o.dir, 0o755); // nginx's workers (nobody, when started as root) read the certificate and write temporary files here
  for (const d of TEMP_DIRS) mkdirSync(join(o.dir, "nginx", d), { recursive: true, mode: 0o777 });
  const config = join(o.dir, "nginx.conf");
  const errorLog = join(o.dir, "nginx-error.log");
  writeFileSync(
    config,
    [
      `worker_processes ${o.workerProcesses ?? 1};`,
      `pid ${join(o.dir, "nginx.pid")};`,
      `error_log ${errorLog} warn;`,
      "events { worker_connections 256; }",
      "http {",
      "  access_log off;",
      ...TEMP_DIRS.map((d) => `  ${d}_temp_path ${join(o.dir, "nginx", d)};`),
      ...o.sites,
      "}",
    ].join("\n"),
  );
  execFileSync(NGINX_BIN, ["-t", "-p", o.dir, "-c", config], { stdio: "pipe" });
  const nginx = spawn(NGINX_BIN, ["-p", o.dir, "-c", config, "-g", "daemon off;"], { stdio: "ignore" });
  try {
    for (const port of o.listenPorts) await listening(nginx, port, errorLog);
    return nginx;
  } catch (err) {
    nginx.kill("SIGKILL");
    throw err;
  }
}

async function listening(nginx: ChildProcess, port: number, errorLog: string): Promise<void> {
  const deadline = Date.now() + LISTEN_WAIT_MS_MAX;
  const log = () => (existsSync(errorLog) ? readFileSync(errorLog, "utf8").slice(-2_000) : "(no error log)");
  while (!(await accepts(port))) {
    if (nginx.exitCode !== null || nginx.signalCode !== null) throw new Error(`nginx exited during start-up:\n${log()}`);
    if (Date.now() > deadline) throw new Error(`nginx did not listen on 127.0.0.1:${port} within ${LISTEN_WAIT_MS_MAX / 1000} s:\n${log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      ok(true);
    });
    socket.once("error", () => ok(false));
  });
}
