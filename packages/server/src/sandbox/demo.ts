/**
 * The sandbox's demo project and token. The token is kept in the data directory (mode 0600) so a
 * restart prints the same one; live mode never stores a token anywhere, only its hash.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AppContext } from "../context.ts";
import { getDepositAddress } from "../services/getDepositAddress.ts";
import { ALL_PERMISSIONS, createToken } from "../services/tokens.ts";
import { hashToken } from "../tokens.ts";

export type SandboxDemo = { projectId: string; token: string; tokenId: string; depositAddress: string };

export async function ensureSandboxDemo(ctx: AppContext): Promise<SandboxDemo> {
  const file = join(ctx.config.dataDir, "sandbox-demo.json");
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, "utf8")) as { projectId: string; token: string };
    const token = await ctx.ledger.tokens.findByHash(hashToken(saved.token));
    if (token && !token.revoked_at && token.project_id === saved.projectId) {
      const { address } = await getDepositAddress(ctx, saved.projectId);
      return { ...saved, tokenId: token.id, depositAddress: address };
    }
  }
  const project = (await ctx.ledger.projects.list()).find((p) => p.name === "Demo project") ?? (await ctx.ledger.projects.create({ name: "Demo project", plan: "free" }));
  const { id: tokenId, token } = await createToken(ctx, { projectId: project.id, permissions: ALL_PERMISSIONS, mode: "test" });
  writeFileSync(file, JSON.stringify({ projectId: project.id, token }, null, 2), { mode: 0o600 });
  const { address } = await getDepositAddress(ctx, project.id);
  return { projectId: project.id, token, tokenId, depositAddress: address };
}
