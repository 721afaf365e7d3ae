#!/usr/bin/env node
// Runs the TypeScript entry point through tsx (no build step for a self-hosted checkout).
import { register } from "tsx/esm/api";
register();
await import("../src/cli/main.ts");
