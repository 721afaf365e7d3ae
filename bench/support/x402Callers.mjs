// Entry of the bench's caller thread (x402Callers.ts): plain JavaScript that registers tsx first, as a worker
// thread of Node 20 loads its entry before any `--import` of its own has taken effect.
import { register } from "tsx/esm/api";

register();
await import("./x402Callers.ts");
