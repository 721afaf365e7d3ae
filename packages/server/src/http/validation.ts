/** Turns zod issues into one `detail` sentence naming each field and what it must be. */
import type { z } from "zod";
import { badRequest, type DomainError } from "../domain/errors.ts";

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.length ? issue.path.map(String).join(".") : "body";
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return `${path} is required`;
      return `${path} must be ${issue.expected === "int" ? "an integer" : issue.expected === "object" || issue.expected === "record" ? "an object" : issue.expected === "array" ? "an array" : `a ${issue.expected}`}`;
    case "unrecognized_keys":
      return `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `'${k}'`).join(", ")}${path === "body" ? "" : ` in ${path}`} (check the spelling; see GET /openapi.json)`;
    case "too_small":
      return issue.origin === "string"
        ? `${path} must be at least ${issue.minimum} character${issue.minimum === 1 ? "" : "s"}`
        : `${path} must be ${issue.inclusive ? "at least" : "greater than"} ${issue.minimum}`;
    case "too_big":
      return issue.origin === "string"
        ? `${path} must be at most ${issue.maximum} characters`
        : `${path} must be ${issue.inclusive ? "at most" : "less than"} ${issue.maximum}`;
    case "invalid_value":
      return `${path} must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "invalid_union":
      return issue.input === undefined ? `${path} is required` : `${path} has an invalid shape`;
    case "invalid_format":
      return `${path} ${issue.message}`;
    case "custom":
      return `${path} ${issue.message}`;
    case "invalid_key": {
      // A record's key broke its rule: name the object, the key and the rule.
      const inner = issue.issues[0];
      const owner = issue.path.slice(0, -1).map(String).join(".") || "body";
      const key = JSON.stringify(String(issue.path.at(-1) ?? "").slice(0, 60));
      const rule = inner?.code === "too_big" ? `at most ${inner.maximum} characters` : inner?.code === "too_small" ? `at least ${inner.minimum} character${inner.minimum === 1 ? "" : "s"}` : "valid";
      return `${owner} key ${key} must be ${rule}`;
    }
    default:
      return `${path}: ${issue.message}`;
  }
}

export function parseOr400<T extends z.ZodType>(schema: T, input: unknown, what = "request body"): z.infer<T> {
  if (input === undefined || input === null) throw badRequest("invalid_request", `The ${what} must be a JSON object.`);
  const r = schema.safeParse(input, { reportInput: true });
  if (r.success) return r.data;
  throw fromZodError(r.error);
}

export function fromZodError(error: z.ZodError): DomainError {
  const parts = error.issues.slice(0, 5).map(describeIssue);
  return badRequest("invalid_request", `Invalid request: ${parts.join("; ")}.`);
}
