// An env file read by systemd's EnvironmentFile keeps everything after `=` as the value, an inline `# comment`
// included (a shell that sources the same file drops it, so the CLI and the service disagreed). A value with
// whitespace then `#` is refused, naming the setting and never echoing the value; a `#` with no whitespace
// before it (a URL's fragment, a character of a secret) is part of the value and still read.
import { expect, test } from "vitest";
import { ConfigError, loadConfig } from "../src/config.ts";

const DATA_DIR = "/tmp/aw-config-unused";

function refusal(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig({ AGENTWALLET_DATA_DIR: DATA_DIR, ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`${JSON.stringify(env)} was accepted`);
}

test("error: a number followed by an inline comment names the setting and says to move the comment", () => {
  const message = refusal({ PORT: "8080 # api" });
  expect(message).toMatch(/^PORT ends in an inline comment/);
  expect(message).toMatch(/EnvironmentFile/);
  expect(message).toMatch(/move the comment to a line of its own/i);
});

test("error: a database URL followed by an inline comment is refused for the comment, without its password", () => {
  const message = refusal({ DATABASE_URL: "postgres://agent:hunter2-secret@db.internal:5432/wallet # main db" });
  expect(message).toMatch(/^DATABASE_URL ends in an inline comment/);
  expect(message).not.toContain("hunter2-secret");
  expect(message).not.toContain("main db");
});

test("error: settings no type check would catch (a URL, a path, a secret) are refused too, a tab before # as well", () => {
  expect(refusal({ PUBLIC_BASE_URL: "https://wallet.example.com # public" })).toMatch(/^PUBLIC_BASE_URL ends in an inline comment/);
  expect(refusal({ AGENTWALLET_DATA_DIR: "/var/lib/agentwallet # data" })).toMatch(/^AGENTWALLET_DATA_DIR ends in an inline comment/);
  const secret = refusal({ DEPOSIT_WEBHOOK_SECRET: "whsec_c2VjcmV0\t# from the provider" });
  expect(secret).toMatch(/^DEPOSIT_WEBHOOK_SECRET ends in an inline comment/);
  expect(secret).not.toContain("whsec_c2VjcmV0");
});

test("default: a # without whitespace before it is part of the value", () => {
  expect(loadConfig({ AGENTWALLET_DATA_DIR: DATA_DIR, PUBLIC_BASE_URL: "https://wallet.example.com/#top" }).publicBaseUrl).toBe("https://wallet.example.com/#top");
  expect(loadConfig({ AGENTWALLET_DATA_DIR: DATA_DIR, DEPOSIT_WEBHOOK_SECRET: "whsec_abc#def" }).webhooks.depositSecret).toBe("whsec_abc#def");
  expect(loadConfig({ AGENTWALLET_DATA_DIR: DATA_DIR, DATABASE_URL: "postgres://agent:pa%23ss@db.internal:5432/wallet" }).databaseUrl).toBe("postgres://agent:pa%23ss@db.internal:5432/wallet");
});

test("default: variables that are not settings of the service are not read", () => {
  expect(loadConfig({ AGENTWALLET_DATA_DIR: DATA_DIR, PS1: "\\u@\\h # " }).port).toBe(8787);
});
