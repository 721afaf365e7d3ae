/**
 * One line of `agentwallet doctor`: a named check of the configuration against reality, its outcome
 * (`ok`, `warn`: works but should change, `fail`: will not work or endangers money), what was found, and,
 * unless ok, what to do about it.
 */
export type CheckStatus = "ok" | "warn" | "fail";
export type Check = { name: string; status: CheckStatus; detail: string; fix?: string };

export const ok = (name: string, detail: string): Check => ({ name, status: "ok", detail });
export const warn = (name: string, detail: string, fix: string): Check => ({ name, status: "warn", detail, fix });
export const fail = (name: string, detail: string, fix: string): Check => ({ name, status: "fail", detail, fix });
