/** The operator's commands around a live deployment: `doctor` (checks it), `init` (sets it up). */
import { newId, systemClock } from "../ids.ts";
import { runDoctor } from "../services/doctor/runDoctor.ts";
import { initDeployment } from "../services/initDeployment.ts";
import type { Check } from "../services/doctor/check.ts";
import type { Command } from "./command.ts";

const MARK: Record<Check["status"], string> = { ok: "ok  ", warn: "warn", fail: "FAIL" };

export const doctor: Command = async ({ config, io }) => {
  const report = await runDoctor(config, new Date());
  const width = Math.max(...report.checks.map((c) => c.name.length));
  const lines = report.checks.map((c) => `${MARK[c.status]}  ${c.name.padEnd(width)}  ${c.detail}${c.fix ? `\n      ${" ".repeat(width)}  fix: ${c.fix}` : ""}`);
  const failed = report.checks.filter((c) => c.status === "fail").length;
  const warned = report.checks.filter((c) => c.status === "warn").length;
  io.out(`${lines.join("\n")}\n\n${failed ? `${failed} check(s) failed` : "No check failed"}${warned ? `, ${warned} warning(s)` : ""}.`, report);
  return report.ok ? 0 : 1;
};

export const init: Command = async ({ config, io }) => {
  const r = await initDeployment(config, { clock: systemClock, newId });
  const lines = [
    `${r.database}: ${r.migrations_applied.length ? `${r.migrations_applied.length} migration(s) applied` : "at the latest schema"}; ${r.mode_recorded ? "recorded as" : "already recorded as"} a ${r.mode} deployment on chain ${r.chain_id}.`,
    r.mnemonic.source === "environment" ? "Master mnemonic: taken from AGENTWALLET_MASTER_MNEMONIC." : `Master mnemonic: ${r.mnemonic.created ? "generated into" : "kept in"} ${r.mnemonic.path}${r.mnemonic.created ? " (mode 0600)" : ""}.`,
    r.admin_credential
      ? `Admin credential ${r.admin_credential.id}:\n\n  ${r.admin_credential.credential}\n\nIt is shown once; only its hash is stored. Keep it in your password manager.`
      : "Admin credential: an active one exists; none created (`agentwallet admin credentials create` makes another).",
    r.changed ? "" : "Nothing changed: this deployment was initialized already.",
    `Still to do:\n${r.todo.map((t, i) => `  ${i + 1}. ${t}`).join("\n")}`,
  ];
  io.out(lines.filter(Boolean).join("\n"), r);
  return 0;
};
