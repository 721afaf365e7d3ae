/**
 * The service as the tests spawn it: `agentwallet` and its two thread entries, bundled once per test run
 * from the current sources by esbuild (the transformer tsx itself runs on each file). A checkout runs
 * `bin/agentwallet.js`, which loads the same sources through tsx file by file: 2 s and 3.5 CPU-seconds
 * for each of a process's two threads, against 0.35 s and 0.45 bundled, and the suite starts some sixty
 * servers. The README walkthrough (`sandbox.e2e`) still runs the checkout's own entry, tsx and all
 * (docs/decisions.md, "Spawned test servers run a bundle of the sources").
 *
 * The bundle lives three levels under `packages/` (as `src/http/` does), so paths the service resolves
 * from its own location (the MCP server's bin) land where they do in the checkout; packages stay
 * external only where they carry native code or are optional.
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "../../../..");
const server = join(root, "packages/server");

/** Set by the suite's global setup for every worker; a file run alone without it falls back to the checkout's bin. */
export const TEST_BIN_ENV = "AGENTWALLET_TEST_BIN";

/** The entry the tests spawn: the run's bundle when the global setup built one, else the checkout's bin. */
export function agentwalletBin(): string {
  return process.env[TEST_BIN_ENV] || join(server, "bin/agentwallet.js");
}

/** Bundles the CLI into a directory of its own (two runs at once never share one); answers its entry and a remover. */
export async function buildForTests(): Promise<{ bin: string; remove: () => void }> {
  const { build } = await import("esbuild");
  removeAbandoned();
  const dir = join(server, ".test-build", `${process.pid}-${Date.now().toString(36)}`);
  mkdirSync(dir, { recursive: true });
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    await build({
      entryPoints: {
        main: join(server, "bin/agentwallet.js"),
        // Resolved by server.ts and signingPool.ts next to their own module: `new URL("./….mjs", import.meta.url)`.
        settlementThread: join(server, "src/settlementThread.mjs"),
        signingWorker: join(server, "src/chain/signingWorker.mjs"),
      },
      outdir: dir,
      outExtension: { ".js": ".mjs" },
      bundle: true,
      splitting: true,
      format: "esm",
      platform: "node",
      target: "node20",
      logLevel: "error",
      // CommonJS packages inside an ES module bundle still call require for Node's own modules.
      banner: { js: "import { createRequire as __awRequire } from 'node:module'; const require = __awRequire(import.meta.url);" },
      external: ["better-sqlite3", "pg-native", "@foundry-rs/*", "bufferutil", "utf-8-validate"],
      plugins: [
        {
          // The entries register tsx before importing TypeScript; in a bundle there is none left to load.
          name: "no-tsx",
          setup(b) {
            b.onResolve({ filter: /^tsx\/esm\/api$/ }, () => ({ path: "tsx", namespace: "no-tsx" }));
            b.onLoad({ filter: /.*/, namespace: "no-tsx" }, () => ({ contents: "export const register = () => {};", loader: "js" }));
          },
        },
      ],
    });
  } catch (e) {
    remove();
    throw e;
  }
  return { bin: join(dir, "main.mjs"), remove };
}

/** Bundles of runs whose process is gone (stopped before their teardown); a run still going keeps its own. */
function removeAbandoned(): void {
  const parent = join(server, ".test-build");
  if (!existsSync(parent)) return;
  for (const name of readdirSync(parent)) {
    const pid = Number(name.split("-")[0]);
    if (Number.isInteger(pid) && pid > 0 && isRunning(pid)) continue;
    rmSync(join(parent, name), { recursive: true, force: true });
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
