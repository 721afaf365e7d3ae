import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { Balance, TransactionList } from "@agentwallet/api";
import { afterAll, describe, expect, test } from "vitest";
import { agentwalletBin } from "./support/testBuild.ts";

const root = resolve(import.meta.dirname, "../../..");
const bin = join(root, "packages/server/bin/agentwallet.js");
const run = promisify(execFile);

/**
 * The run's bundle of the service (testBuild.ts): the sandbox's behaviour, checked by the first test, is the same
 * code whichever way it is loaded; the README walkthrough runs the checkout's own entry, as `npm start` does.
 */
const bundled = agentwalletBin();

/** Starts `agentwallet serve` like `npm start` does (through `entry`) and resolves once the banner is printed. */
export async function spawnSandbox(dataDir: string, env: NodeJS.ProcessEnv = {}, entry = bin) {
  const started = Date.now();
  const child = spawn(process.execPath, [entry, "serve", "--port", "0", "--data-dir", dataDir], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: "", BASE_RPC_URL: "", LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const banner = await new Promise<string>((resolveBanner, reject) => {
    const timer = setTimeout(() => reject(new Error(`sandbox did not start within 120 s:\n${out}`)), 120_000);
    const check = () => {
      if (/Try:\n\s+curl/.test(out)) {
        clearTimeout(timer);
        resolveBanner(out);
      }
    };
    child.stdout!.on("data", check);
    child.once("exit", (code) => reject(new Error(`sandbox exited with ${code}:\n${out}`)));
  });
  const field = (label: string) => new RegExp(`${label}\\s+(\\S+)`).exec(banner)![1]!;
  return { child, banner, ms: Date.now() - started, baseUrl: field("Base URL"), token: field("Demo token"), projectId: field("Demo project"), address: field("Deposit address") };
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const t = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(t);
}

describe("sandbox: npm start on a fresh data dir", () => {
  const dir = mkdtempSync(join(tmpdir(), "aw-sandbox-"));
  const children: ChildProcess[] = [];
  afterAll(async () => {
    await Promise.all(children.map(stopProcess));
    rmSync(dir, { recursive: true, force: true });
  });

  test("serves, the printed token reads the balance, the CLI reaches it, and a restart keeps project, token, chain and merchant port", async () => {
    // Start-up time is measured by `npm run bench -- start`, not asserted here.
    const s = await spawnSandbox(dir, {}, bundled);
    children.push(s.child);
    const auth = { authorization: `Bearer ${s.token}` };
    const bal = Balance.parse(await (await fetch(`${s.baseUrl}/v1/balance`, { headers: auth })).json());
    expect(bal).toMatchObject({ project_id: s.projectId, available: 0, wallet_address: s.address });

    const { stdout } = await run(process.execPath, [bundled, "fund", "--project", s.projectId, "--amount-usdc", "25", "--data-dir", dir, "--json"], { cwd: root, env: { ...process.env, DATABASE_URL: "", BASE_RPC_URL: "" }, timeout: 120_000 });
    expect(JSON.parse(stdout)).toMatchObject({ amount_micros: 25_000_000, credited: true });
    const after = Balance.parse(await (await fetch(`${s.baseUrl}/v1/balance`, { headers: auth })).json());
    expect(after).toMatchObject({ available: 25_000_000, total_funded: 25_000_000 });
    const list = TransactionList.parse(await (await fetch(`${s.baseUrl}/v1/transactions`, { headers: auth })).json());
    expect(list.transactions[0]).toMatchObject({ type: "usdc_fund", amount: 25_000_000, status: "completed" });

    const info = JSON.parse((await run(process.execPath, [bundled, "sandbox", "info", "--json", "--data-dir", dir], { cwd: root, env: { ...process.env, BASE_RPC_URL: "" } })).stdout);
    expect(info).toMatchObject({ base_url: s.baseUrl, chain_id: 8453 });
    expect(info.rpc_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(info.usdc_address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(info.demo_merchant_paid_url).toBe(`${info.demo_merchant_url}/paid`);
    expect(s.banner).toContain(info.demo_merchant_paid_url);

    // Pay, then check operator commands: workers run-once and reconcile against the running sandbox.
    const pay = await fetch(`${s.baseUrl}/v1/pay`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ recipient: "0x90F79bf6EB2c4f870365E785982E1f101E93b906", amount_usd: 2 }) });
    expect(pay.status).toBe(201);
    const cliEnv = { cwd: root, env: { ...process.env, DATABASE_URL: "", BASE_RPC_URL: "" }, timeout: 120_000 };
    for (let i = 0; i < 50; i++) {
      const once = JSON.parse((await run(process.execPath, [bundled, "workers", "run-once", "--json", "--data-dir", dir], cliEnv)).stdout);
      if (once.still_open === 0) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const rec = JSON.parse((await run(process.execPath, [bundled, "reconcile", "--json", "--data-dir", dir], cliEnv)).stdout);
    expect(rec.ok).toBe(true);
    expect(rec.rows.find((r: { project_id: string }) => r.project_id === s.projectId)).toMatchObject({ onchain_micros: 22_960_000, available_micros: 22_960_000, drift_micros: 0 });

    // A restart reuses the same demo project and token, and the chain keeps its state.
    await stopProcess(s.child);
    const again = await spawnSandbox(dir, {}, bundled);
    children.push(again.child);
    expect(again.projectId).toBe(s.projectId);
    expect(again.token).toBe(s.token);
    const kept = Balance.parse(await (await fetch(`${again.baseUrl}/v1/balance`, { headers: auth })).json());
    expect(kept.available).toBe(22_960_000);
    // The demo merchant listens where it did: a URL copied from the first banner still pays.
    const infoAgain = JSON.parse((await run(process.execPath, [bundled, "sandbox", "info", "--json", "--data-dir", dir], { cwd: root, env: { ...process.env, BASE_RPC_URL: "" }, timeout: 120_000 })).stdout);
    expect(infoAgain.demo_merchant_paid_url).toBe(info.demo_merchant_paid_url);
    const paidAgain = await fetch(`${again.baseUrl}/v1/pay`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ recipient: info.demo_merchant_paid_url, max_amount_usdc: 10_000 }) });
    expect(paidAgain.status).toBe(200);
    // Two servers and five CLI processes, each loading the run's bundle (and a server its settlement thread).
  }, 480_000);
});

/**
 * The README's walkthrough, run as written: its sh blocks are read from README.md, the values `npm start`
 * prints are filled in (TOKEN, PROJECT, the base URL, the merchant port), and each numbered step runs in bash.
 * A step's comment says what comes back — `(201, status pending; …)` — and that is what the test expects.
 */
describe("README walkthrough", () => {
  const dir = mkdtempSync(join(tmpdir(), "aw-readme-"));
  const children: ChildProcess[] = [];
  afterAll(async () => {
    await Promise.all(children.map(stopProcess));
    rmSync(dir, { recursive: true, force: true });
  });

  test("every step answers what the README says it answers", async () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Walkthrough (sandbox)"), readme.indexOf("\n## ", readme.indexOf("## Walkthrough (sandbox)") + 1));
    const sample = /```\n(Agent Wallet sandbox is running\.[\s\S]*?)```/.exec(section)![1]!;
    const shBlocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
    expect(shBlocks.length).toBeGreaterThanOrEqual(2);
    const steps = shBlocks.flatMap(parseSteps);
    expect(steps.map((step) => step.n)).toEqual([1, 2, 3, 4, 5, 6]);

    const s = await spawnSandbox(dir);
    children.push(s.child);
    // The banner has every line the README shows.
    for (const label of [...sample.matchAll(/^ {2}(\S+(?: \S+)*?) {2,}/gm)].map((m) => m[1]!)) expect(s.banner).toContain(`  ${label} `);
    const info = JSON.parse((await run(process.execPath, [bin, "sandbox", "info", "--json", "--data-dir", dir], { cwd: root, env: { ...process.env, BASE_RPC_URL: "" }, timeout: 120_000 })).stdout);
    const merchantPort = new URL(info.demo_merchant_url).port;

    const env = { ...process.env, DATABASE_URL: "", BASE_RPC_URL: "", AGENTWALLET_DATA_DIR: dir, TOKEN: s.token, PROJECT: s.projectId };
    const answers = new Map<number, { status?: number; body?: Record<string, unknown> }>();
    for (const step of steps) {
      const command = step.command
        .replaceAll("http://127.0.0.1:8787", s.baseUrl)
        .replaceAll("<merchant port>", merchantPort)
        // The status code the comment names, on a line of its own after the body.
        .replace(/^curl -s /, `curl -s -w '\\n%{http_code}' `);
      const { stdout } = await run("bash", ["-c", command], { cwd: root, env, timeout: 120_000 });
      if (!command.startsWith("curl")) {
        answers.set(step.n, {});
        continue;
      }
      const lines = stdout.trimEnd().split("\n");
      const status = Number(lines.pop());
      const body = JSON.parse(lines.join("\n")) as Record<string, unknown>;
      answers.set(step.n, { status, body });
      expect(status, `step ${step.n}: ${stdout}`).toBe(step.expectStatus);
      if (step.expectField) expect(body.status, `step ${step.n}: ${stdout}`).toBe(step.expectField);
    }
    expect(answers.get(1)!.body).toMatchObject({ available: 0, pending: 0, total_funded: 0, total_spent: 0 });
    expect((answers.get(3)!.body!.transactions as { type: string; status: string; amount: number }[])[0]).toMatchObject({ type: "usdc_fund", status: "completed", amount: 25_000_000 });
    // "its settlement report among the reply's headers", and its tx_hash "null until then" (proven right after the answer).
    expect(answers.get(6)!.body).toMatchObject({ response: { headers: { "payment-response": expect.any(String) } }, tx_hash: null });
    // "completed a moment later in /v1/transactions" (step 4), "completes after 3 s" (step 5): bounded wait.
    const ids = [answers.get(4)!.body!.id, answers.get(5)!.body!.id];
    let statuses: unknown[] = [];
    for (let i = 0; i < 300; i++) {
      const read = await fetch(`${s.baseUrl}/v1/transactions?limit=100`, { headers: { authorization: `Bearer ${s.token}` } });
      // A loaded machine can meet the demo token's rate limit while settlement runs: wait as a client would.
      if (read.status === 429) {
        await new Promise((r) => setTimeout(r, 1000 * Number(read.headers.get("retry-after") ?? 1)));
        continue;
      }
      const list = TransactionList.parse(await read.json());
      statuses = ids.map((id) => list.transactions.find((t) => t.id === id)?.status);
      if (statuses.every((x) => x === "completed")) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(statuses).toEqual(["completed", "completed"]);
    // "GET /v1/transactions/{id} then shows it in tx_hash".
    let paid = await fetch(`${s.baseUrl}/v1/transactions/${answers.get(6)!.body!.id as string}`, { headers: { authorization: `Bearer ${s.token}` } });
    for (let i = 0; i < 10 && paid.status === 429; i++) {
      await new Promise((r) => setTimeout(r, 1000 * Number(paid.headers.get("retry-after") ?? 1)));
      paid = await fetch(`${s.baseUrl}/v1/transactions/${answers.get(6)!.body!.id as string}`, { headers: { authorization: `Bearer ${s.token}` } });
    }
    expect(((await paid.json()) as { tx_hash: string | null }).tx_hash).toMatch(/^0x[0-9a-f]{64}$/);

    // "Know the price first": the quote, then the payment that names it.
    const sh = (command: string) => run("bash", ["-c", command.replaceAll("http://127.0.0.1:8787", s.baseUrl).replaceAll("<merchant port>", merchantPort)], { cwd: root, env, timeout: 120_000 });
    const [quoteCommand, payQuotedCommand] = commandsOf(readme, "## Know the price first");
    const quote = JSON.parse((await sh(quoteCommand!)).stdout) as Record<string, unknown>;
    expect(quote).toMatchObject({ quote_id: expect.stringMatching(/^quo_/), payment_required: true, protocol: "x402", amount_usdc: 10_000, controls: { verdict: "would_pay" } });
    const paidQuoted = JSON.parse((await sh(payQuotedCommand!.replace("quo_…", quote.quote_id as string))).stdout) as Record<string, unknown>;
    expect(paidQuoted).toMatchObject({ rail: "x402", amount_charged: quote.amount_usdc });

    // "Prove a payment": the evidence of the walkthrough's x402 payment, verified from the database and from its
    // export (files in the test's directory); the two independent pairs run side by side.
    const proof = commandsOf(readme, "## Prove a payment").map((c) =>
      c.replace("TRANSACTION_ID", answers.get(6)!.body!.id as string).replaceAll("PROJECT_ID", "$PROJECT").replaceAll("proof.jsonl", join(dir, "proof.jsonl")).replace("payments.csv", join(dir, "payments.csv")),
    );
    expect(proof).toHaveLength(5);
    const evidence = JSON.parse((await sh(proof[0]!)).stdout) as { records: { kind: string }[] };
    expect(evidence.records.length).toBeGreaterThanOrEqual(2);
    await Promise.all([sh(proof[1]!), sh(proof[2]!)]);
    await Promise.all([sh(proof[3]!), sh(proof[4]!)]);
    expect(readFileSync(join(dir, "payments.csv"), "utf8")).toContain(answers.get(6)!.body!.id as string);
    // Six CLI processes (fund, then the four of "Prove a payment" in two pairs), each loading the service: 7 min
    // measured on two cores under a load average of 18, well under that alone.
  }, 720_000);
});

/** The commands of a README section's sh blocks (continuations joined, comment lines left out), in order. */
function commandsOf(readme: string, heading: string): string[] {
  const start = readme.indexOf(heading);
  const section = readme.slice(start, readme.indexOf("\n## ", start + 1));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => m[1]!.replace(/\\\n\s*/g, "").split("\n").filter((line) => line.trim() && !line.startsWith("#")));
}

type Step = { n: number; command: string; expectStatus?: number; expectField?: string };

/** `# N. what it does (201, status pending; …)` followed by the command (with `\` continuations). */
function parseSteps(block: string): Step[] {
  const steps: Step[] = [];
  let current: Step | undefined;
  for (const line of block.replace(/\\\n\s*/g, "").split("\n")) {
    const head = /^# (\d+)\. .*?\((\d{3})(?:, status (\w+))?/.exec(line) ?? /^# (\d+)\. /.exec(line);
    if (head) {
      current = { n: Number(head[1]), command: "", expectStatus: head[2] ? Number(head[2]) : undefined, expectField: head[3] };
      steps.push(current);
    } else if (current && line.trim() && !line.startsWith("#")) {
      current.command += line.trim();
    }
  }
  return steps;
}
