// Entry of the settlement thread (settlement/settlement.ts; server.ts names it). Plain JavaScript, so it runs
// before tsx is registered: tsx is registered here, and the thread does not depend on how its process was
// started. Its body, settlementMain.ts, builds its dependencies through deps.ts.
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";
import { workerData } from "node:worker_threads";
import { register } from "tsx/esm/api";

register();
await import("./settlementMain.ts");

// Requests first, once the code is loaded: on Linux this thread (and the signing thread it starts next,
// which inherits it) runs at a lower CPU priority, so when the cores are short the event loop that answers
// requests gets them and settlement takes the rest. Loading runs at the process's priority: at nice 10 a
// busy machine took 30 s and more to load it, and the server settled nothing meanwhile. Elsewhere the
// thread keeps the process's priority.
try {
  const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
  if (Number.isInteger(tid) && tid > 0) setPriority(tid, workerData.nice);
} catch {
  /* no per-thread priority here */
}
