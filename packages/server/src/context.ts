/**
 * The whole of what a process serving requests is given, composed from the layers' own declarations
 * (http/httpDeps.ts ⊇ services/serviceDeps.ts ⊇ rails/railDeps.ts) for the wiring, the CLI and tests.
 * Built once by deps.ts; nothing below the top imports it.
 */
import type { HttpDeps } from "./http/httpDeps.ts";

export type AppContext = HttpDeps;
