/** Configuration from the environment, and how the bin reports a bad one. */
import { describe, expect, test } from "vitest";
import { ConfigError, defaultBaseUrl, loadConfig, mcpLimits } from "../src/config.ts";
import { formatUsd, usdToMicrosCeil } from "../src/money.ts";
import { binPath, cleanEnv, fakeToken, run } from "./helpers.ts";

describe("loadConfig", () => {
  test("default: only the token is required; everything else has a named default", () => {
    expect(loadConfig({ AGENTWALLET_API_TOKEN: fakeToken })).toEqual({
      token: fakeToken,
      baseUrl: defaultBaseUrl,
      readOnly: false,
      maxPaymentMicros: undefined,
      confirmAboveMicros: 10_000_000,
      requestTimeoutMs: mcpLimits.requestTimeoutMsDefault,
    });
  });

  test("behavior: every variable is read, and the base URL loses its trailing slash", () => {
    const config = loadConfig({
      AGENTWALLET_API_TOKEN: fakeToken,
      AGENTWALLET_BASE_URL: "https://wallet.example.com/",
      AGENTWALLET_READ_ONLY: "true",
      AGENTWALLET_MAX_PAYMENT_USD: "$2.50",
      AGENTWALLET_CONFIRM_ABOVE_USD: "0",
      AGENTWALLET_TIMEOUT_MS: "5000",
    });
    expect(config).toMatchObject({
      baseUrl: "https://wallet.example.com",
      readOnly: true,
      maxPaymentMicros: 2_500_000,
      confirmAboveMicros: 0,
      requestTimeoutMs: 5000,
    });
  });

  test.each([
    [{ AGENTWALLET_API_TOKEN: undefined }, "AGENTWALLET_API_TOKEN is not set"],
    [{ AGENTWALLET_API_TOKEN: "  " }, "AGENTWALLET_API_TOKEN is not set"],
    [{ AGENTWALLET_BASE_URL: "ftp://x" }, "AGENTWALLET_BASE_URL must be an http(s) URL"],
    [{ AGENTWALLET_READ_ONLY: "maybe" }, "AGENTWALLET_READ_ONLY must be 1 or 0"],
    [{ AGENTWALLET_MAX_PAYMENT_USD: "0" }, "AGENTWALLET_MAX_PAYMENT_USD must be a positive amount"],
    [{ AGENTWALLET_MAX_PAYMENT_USD: "ten" }, "AGENTWALLET_MAX_PAYMENT_USD must be a positive amount"],
    [{ AGENTWALLET_TIMEOUT_MS: "10" }, "AGENTWALLET_TIMEOUT_MS must be a whole number"],
  ])("error: %o is refused with a message naming the variable", (env, message) => {
    const withToken = "AGENTWALLET_API_TOKEN" in env ? env : { AGENTWALLET_API_TOKEN: fakeToken, ...env };
    expect(() => loadConfig(withToken)).toThrowError(ConfigError);
    expect(() => loadConfig(withToken)).toThrowError(message);
  });
});

describe("money", () => {
  test.each([
    ["5", 5_000_000],
    ["2.50", 2_500_000],
    [0.1, 100_000],
    [1.1, 1_100_000],
    [5.000001, 5_000_001],
    [1e-7, 1],
    ["0.0000001", 1],
    ["2.5e3", 2_500_000_000],
    [100_000, 100_000_000_000],
  ])("behavior: %s USD is %i micro-USD (exact, rounded up)", (usd, micros) => {
    expect(usdToMicrosCeil(usd)).toBe(micros);
  });

  test.each(["", "-1", "abc", "1.2.3", Number.NaN, Number.POSITIVE_INFINITY, "9".repeat(65)])(
    "error: %s is not an amount",
    (value) => {
      expect(usdToMicrosCeil(value)).toBeUndefined();
    },
  );

  test("behavior: formatUsd keeps at least cents and drops trailing zeros beyond", () => {
    expect([5_000_000, 2_500_000, 1_234_500, 1, 0].map(formatUsd)).toEqual(["$5.00", "$2.50", "$1.2345", "$0.000001", "$0.00"]);
  });
});

describe("agentwallet-mcp start-up", () => {
  test("error: without AGENTWALLET_API_TOKEN it says so on stderr and exits non-zero", async () => {
    const result = await run(process.execPath, [binPath], { env: cleanEnv({}), timeoutMs: 30_000 });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("agentwallet-mcp: AGENTWALLET_API_TOKEN is not set.");
    expect(result.stdout).toBe("");
  });

  test("error: an unknown argument or a bad variable stops it the same way", async () => {
    const badArg = await run(process.execPath, [binPath, "--htp", "80"], { env: cleanEnv({ AGENTWALLET_API_TOKEN: fakeToken }) });
    expect(badArg.code).toBe(1);
    expect(badArg.stderr).toContain('unknown argument "--htp"');
    const badCap = await run(process.execPath, [binPath], {
      env: cleanEnv({ AGENTWALLET_API_TOKEN: fakeToken, AGENTWALLET_MAX_PAYMENT_USD: "lots" }),
    });
    expect(badCap.code).toBe(1);
    expect(badCap.stderr).toContain("AGENTWALLET_MAX_PAYMENT_USD");
    expect(badCap.stderr).not.toContain(fakeToken);
  });
});
