/**
 * PRIVATE_TARGETS: the private-network services a deployment may reach (x402 APIs and webhook receivers inside
 * the operator's network), each named as address:port, in live mode too; every other private address stays
 * refused. The fetcher's side (the dialled address and port against the list) is safeFetch's `allowedTargets`.
 */
import { describe, expect, test } from "vitest";
import { ConfigError, loadConfig } from "../src/config.ts";
import { checkWebhookUrl } from "../src/services/webhooks/endpoints.ts";

const load = (value: string) => loadConfig({ AGENTWALLET_DATA_DIR: "/nonexistent", PRIVATE_TARGETS: value });

describe("PRIVATE_TARGETS", () => {
  test("default: none; a list of address:port, IPv6 in brackets, is the x402 fetcher's allowed targets", () => {
    expect(load("").privateTargets).toEqual([]);
    const c = load("10.0.0.5:443, [FD00::7]:8443,127.0.0.1:9000");
    expect(c.privateTargets).toEqual(["10.0.0.5:443", "[fd00::7]:8443", "127.0.0.1:9000"]);
    expect(c.x402.allowedTargets).toEqual(c.privateTargets);
  });

  test.each(["internal.example:443", "10.0.0.5", "10.0.0.5:0", "10.0.0.5:70000", "fd00::7:443", "[10.0.0.5]:443", "10.0.0.5:443,,10.0.0.6:443"])("error: %s is refused with a clear message", (value) => {
    expect(() => load(value)).toThrow(ConfigError);
    expect(() => load(value)).toThrow(/PRIVATE_TARGETS: .* is not address:port\. Give each private service as address:port/);
  });

  test("behavior: in live mode a webhook URL to a private address is taken only when PRIVATE_TARGETS names its address and port", () => {
    expect(() => checkWebhookUrl("https://10.0.0.5/hooks", "live")).toThrow(/ address; live mode delivers only to public hosts and to the private ones PRIVATE_TARGETS names/);
    expect(checkWebhookUrl("https://10.0.0.5/hooks", "live", ["10.0.0.5:443"])).toBe("https://10.0.0.5/hooks");
    expect(checkWebhookUrl("https://[fd00::7]:8443/h", "live", ["[fd00::7]:8443"])).toBe("https://[fd00::7]:8443/h");
    expect(() => checkWebhookUrl("https://10.0.0.5:8443/hooks", "live", ["10.0.0.5:443"])).toThrow(/live mode delivers only to public hosts/);
    expect(() => checkWebhookUrl("https://10.0.0.6/hooks", "live", ["10.0.0.5:443"])).toThrow(/live mode delivers only to public hosts/);
  });
});
