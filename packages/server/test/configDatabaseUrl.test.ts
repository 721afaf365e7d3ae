// DATABASE_URL is read once, in config.ts: a URL the service cannot use is refused there with what is wrong
// with it, instead of reaching the PostgreSQL driver (which read `mysql://…` as a PostgreSQL role and
// `garbage` as a host name, "ENOTFOUND base"). The password is never part of the message.
import { expect, test } from "vitest";
import { ConfigError, loadConfig } from "../src/config.ts";

function refusal(url: string): string {
  try {
    loadConfig({ DATABASE_URL: url, AGENTWALLET_DATA_DIR: "/tmp/aw-config-unused" });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`DATABASE_URL=${url} was accepted`);
}

test("error: another database's scheme is named, with the schemes that work", () => {
  const message = refusal("mysql://agent:hunter2-secret@db.internal:3306/wallet");
  expect(message).toMatch(/DATABASE_URL must start with postgres:\/\/ or postgresql:\/\/ \(it starts with mysql:\/\/\)/);
  expect(message).not.toContain("hunter2-secret");
});

test("error: text that is no URL says so and shows the expected shape", () => {
  const message = refusal("garbage");
  expect(message).toMatch(/DATABASE_URL is not a URL/);
  expect(message).toMatch(/postgres:\/\/USER:PASSWORD@HOST:PORT\/DATABASE/);
  expect(message).not.toContain("garbage");
});

test("error: a URL without a host names the missing host", () => {
  expect(refusal("postgres:///wallet")).toMatch(/DATABASE_URL names no host/);
});

test("error: a URL that does not parse (a bad port, an unescaped character in the password) hides the password", () => {
  const message = refusal("postgres://agent:hunter2#secret@db.internal:5432/wallet");
  expect(message).toMatch(/DATABASE_URL/);
  expect(message).not.toContain("hunter2");
  expect(message).not.toContain("secret");
  expect(refusal("postgres://agent@db.internal:99999/wallet")).toMatch(/port/);
});

test("default: postgres://, postgresql://, a socket given as ?host= and an empty value are accepted", () => {
  expect(loadConfig({ DATABASE_URL: "postgres://agent:pw@db.internal:5432/wallet" }).databaseUrl).toBe("postgres://agent:pw@db.internal:5432/wallet");
  expect(loadConfig({ DATABASE_URL: "postgresql://agent@db.internal/wallet" }).databaseUrl).toBe("postgresql://agent@db.internal/wallet");
  expect(loadConfig({ DATABASE_URL: "postgres:///wallet?host=/var/run/postgresql" }).databaseUrl).toBe("postgres:///wallet?host=/var/run/postgresql");
  expect(loadConfig({ DATABASE_URL: "" }).databaseUrl).toBeFalsy();
});
