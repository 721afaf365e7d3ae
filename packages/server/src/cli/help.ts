/**
 * Each command's own `--help`: its usage line, what it does, its options and an example. `agentwallet
 * --help` lists every command; `agentwallet <command> --help` prints the command's entry here (exit 0).
 */

const CONTROLS = `Spending controls (each optional; "none" removes a value):
  --max-payment-usd N        the most one payment may be
  --daily-limit-usd N        per UTC day; also --weekly-limit-usd (from Monday), --monthly-limit-usd,
                             --total-limit-usd (all time); --clear-limits removes every limit
  --allow RECIPIENT          only these (repeat): HOST, *.HOST, 0x… address, bank:ROUTING:ACCOUNT; "any" clears
  --block RECIPIENT          never these (repeat; "none" clears)
  --rails LIST               x402,usdc_transfer,fiat ("any" clears)
  --approval-above-usd N     USDC and bank payments above N wait for \`payments approve\``;

const ID_ONLY = (usage: string, what: string, example: string) => `Usage: agentwallet ${usage}

${what}

Example:
  npm run -s agentwallet -- ${example}`;

/** The help of every command, by the command's words. */
export const COMMAND_HELP: Record<string, string> = {
  serve: `Usage: agentwallet serve [--port N] [--host H] [--data-dir DIR]

Starts the API (and the console at /console). Without BASE_RPC_URL it is the sandbox: SQLite in the data
directory, a local chain, a demo project and token printed. With BASE_RPC_URL it is live mode. The first start
on a database records its mode; a live server refuses a test database and the reverse.

Options:
  --port N          port to listen on (default PORT or 8787; 0 takes a free one)
  --host H          address to listen on (default HOST or 127.0.0.1)

Example:
  npm start`,

  migrate: `Usage: agentwallet migrate

Creates the database if it does not exist and applies every migration. A new database records this
configuration's mode: live with BASE_RPC_URL set (no secret needed), test without.

Example:
  DATABASE_URL=postgres://agentwallet@db.internal/wallet BASE_RPC_URL=https://mainnet.base.org npm run -s agentwallet -- migrate`,

  "projects create": `Usage: agentwallet projects create --name NAME [--plan free|pro|business]

Creates a project: a wallet on Base and a balance of its own.

Options:
  --name NAME       required; shown in the console and lists
  --plan PLAN       free (default), pro or business: sets the platform fee

Example:
  npm run -s agentwallet -- projects create --name "Research agent" --plan pro`,

  "projects list": ID_ONLY("projects list", "Lists every project: id, plan, whether it is paused, name.", "projects list --json"),
  "projects pause": ID_ONLY("projects pause PROJECT_ID", "Pauses a project: its payments are refused (403) until it is resumed.", "projects pause prj_…"),
  "projects resume": ID_ONLY("projects resume PROJECT_ID", "Resumes a paused project.", "projects resume prj_…"),
  "projects limits": `Usage: agentwallet projects limits PROJECT_ID [controls]

Shows or changes the spending controls every token of the project obeys too (the stricter wins). Only the
options given change; with none, prints the current controls.

${CONTROLS}

Example:
  npm run -s agentwallet -- projects limits prj_… --daily-limit-usd 500`,

  "tokens create": `Usage: agentwallet tokens create --project ID --permissions LIST [--name NAME] [--expires-in DURATION] [controls]

Issues an API token for a project and prints it once (only its hash is stored). Its prefix is the
deployment's mode as its database records it: aw_live_ on a live deployment, aw_test_ on the sandbox. No
signing secret is needed (a bank:… recipient in --allow/--block needs the master key source, to hash it).

Options:
  --project ID          required: the project (prj_…)
  --permissions LIST    required: a comma-separated subset of read,pay,x402,delegate (delegate: it may
                        create child tokens no wider than itself, POST /v1/tokens)
  --name NAME           which agent holds it (1 to 100 characters), shown in lists
  --expires-in D        30d, 12h or 90m; without it the token does not expire

${CONTROLS}

Example:
  npm run -s agentwallet -- tokens create --project prj_… --permissions read,pay,x402 --daily-limit-usd 10 --approval-above-usd 1`,

  "tokens list": `Usage: agentwallet tokens list --project ID

Lists a project's tokens: id, the first characters, permissions, state (active, expired, revoked), the parent
of a child token and the name. Never the token.

Example:
  npm run -s agentwallet -- tokens list --project prj_…`,

  "tokens revoke": ID_ONLY("tokens revoke TOKEN_ID", "Revokes a token and every token below it: requests with any of them are refused from the next one on.", "tokens revoke tok_…"),
  "tokens update": `Usage: agentwallet tokens update TOKEN_ID [controls]

Changes a token's spending controls; only the options given change (a limit flag changes only its window).
With none, prints the current controls.

${CONTROLS}

Example:
  npm run -s agentwallet -- tokens update tok_… --monthly-limit-usd 100 --block bank:021000021:123456789`,

  "verify-ledger": ID_ONLY("verify-ledger", "Recomputes every balance from the journal and checks the ledger's invariants; exit 1 if one fails.", "verify-ledger"),
  fund: `Usage: agentwallet fund --project ID --amount-usdc N

Sandbox only: mints test USDC to the project's deposit address on the local chain; the running sandbox
credits it after its confirmations.

Options:
  --project ID          required
  --amount-usdc N       required: up to 6 decimals, at most 1,000,000

Example:
  npm run -s agentwallet -- fund --project prj_… --amount-usdc 25`,

  "sandbox info": ID_ONLY("sandbox info", "Sandbox only: the running sandbox's chain RPC, USDC, relayer and treasury addresses, facilitator and demo merchant URLs.", "sandbox info --json"),
  "payments pending": `Usage: agentwallet payments pending [--project ID]

Lists payments waiting for a person's approval (above an --approval-above-usd threshold), oldest first.

Example:
  npm run -s agentwallet -- payments pending --project prj_…`,
  "payments approve": ID_ONLY("payments approve PAYMENT_ID [--reason TEXT]", "Approves a waiting payment: the running server sends it. The reason is kept in its history and the audit log.", 'payments approve txn_… --reason "expected invoice"'),
  "payments deny": ID_ONLY("payments deny PAYMENT_ID [--reason TEXT]", "Denies a waiting payment: it fails and is credited back. The reason is kept in its history and the audit log.", 'payments deny txn_… --reason "unknown merchant"'),
  "payments resolve": `Usage: agentwallet payments resolve PAYMENT_ID --as failed|completed --reason TEXT [--tx-hash 0x…]

Ends by hand a payment the settlement cannot drive because its stored rail state does not parse (the server
logs such a payment as an error with its id). Read the chain and the provider first: --as failed says
nothing moved (amount and fee are credited back, failure code operator_resolved); --as completed says the
money left (with --tx-hash, the transaction that moved it). Who resolved it and the reason are kept on the
payment; its webhook event is sent as for any final payment. A payment whose rail state parses is refused.

Options:
  --as failed|completed   required
  --reason TEXT           required: what the chain and the provider showed (at most 300 characters)
  --tx-hash 0x…           with --as completed: the transaction that moved the money

Example:
  npm run -s agentwallet -- payments resolve txn_… --as failed --reason "relayer tx 0x… reverted; no Transfer log"`,
  "refusals list": `Usage: agentwallet refusals list [--project ID] [--limit N]

Lists payment attempts the spending controls refused, newest first (--limit: how many, default 50).

Example:
  npm run -s agentwallet -- refusals list --project prj_… --limit 20`,

  "webhooks create": `Usage: agentwallet webhooks create --project ID --url URL [--events LIST]

Sends the project's events to URL, signed per Standard Webhooks; prints the whsec_ signing secret once.
Live mode takes https only; the sandbox also http://127.0.0.1.

Options:
  --project ID      required
  --url URL         required
  --events LIST     a comma-separated subset of payment.created, payment.processing, payment.completed,
                    payment.failed, payment.reversed, payment.approval_required, deposit.pending,
                    deposit.credited (default: every event)

Example:
  npm run -s agentwallet -- webhooks create --project prj_… --url https://hooks.example.com/agentwallet`,
  "webhooks list": ID_ONLY("webhooks list --project ID", "Lists the project's endpoints with their state (disabled after days of failures).", "webhooks list --project prj_…"),
  "webhooks delete": ID_ONLY("webhooks delete ENDPOINT_ID", "Stops sending to an endpoint and deletes it.", "webhooks delete whe_…"),
  "webhooks enable": ID_ONLY("webhooks enable ENDPOINT_ID", "Sends again to a disabled endpoint, starting with what is pending.", "webhooks enable whe_…"),
  "webhooks deliveries": ID_ONLY("webhooks deliveries ENDPOINT_ID [--limit N]", "Shows an endpoint's newest deliveries and their attempts (--limit: 1–1000, default 50).", "webhooks deliveries whe_… --limit 10"),
  "webhooks redeliver": ID_ONLY("webhooks redeliver EVENT_ID", "Sends an event again to its endpoints.", "webhooks redeliver evt_…"),

  "admin credentials create": ID_ONLY(
    "admin credentials create [--name NAME] [--role viewer|approver|admin]",
    "Creates an operator's admin credential (aw_admin_…) for /v1/admin/… and the console's operator sign-in; printed once, only its hash is stored. Its role: viewer reads everything; approver also approves and denies payments; admin (the default) does everything.",
    'admin credentials create --name "on-call" --role approver',
  ),
  "admin credentials list": ID_ONLY("admin credentials list", "Lists admin credentials: id, first characters, state, role, name.", "admin credentials list"),
  "audit list": ID_ONLY(
    "audit list [--project ID] [--action ACTION] [--limit N] [--before SEQ]",
    "Lists the audit log, newest first: who (credential, token or CLI user, and address), what, before -> after, when. --limit 1–500 (default 50); --before pages on.",
    "audit list --project prj_… --action token.revoked",
  ),
  "admin credentials revoke": ID_ONLY("admin credentials revoke ID", "Revokes an admin credential: the admin API and the console refuse it from now on.", "admin credentials revoke adm_…"),

  "workers run-once": ID_ONLY("workers run-once", "Fills relayer nonces the chain lost, then moves every open payment forward once (needs the deployment's chain settings).", "workers run-once --json"),
  reconcile: ID_ONLY("reconcile", "Compares on-chain wallet balances with the ledger; exit 1 on a difference.", "reconcile --json"),
  "verify-evidence": `Usage: agentwallet verify-evidence --project ID | --file EXPORT.jsonl [--offline]

Checks a project's evidence records: their hash chain (numbers, previous hashes, each record's own hash, the
project's head), every signature they carry (the wallet's EIP-3009 authorizations, the exact x402 payload
sent, a merchant's signed receipt and whether its signer may sign for the resource) and every completed
payment's USDC Transfer log on the configured chain. Names each record that does not hold; exit 1 then.
--file reads an "export --format jsonl" file instead of the database; --offline skips the chain.

Example:
  npm run -s agentwallet -- verify-evidence --project prj_…`,
  export: `Usage: agentwallet export --project ID --format jsonl|csv [--out FILE]

Writes the project's payments for accounting, one row each: fee, rail, counterparty, status history and the
hash of its last evidence record; jsonl also carries the evidence records, so verify-evidence --file can
check it with no database. Streamed: memory stays bounded whatever the number of payments.
Default FILE: export-ID.FORMAT in the current directory.

Example:
  npm run -s agentwallet -- export --project prj_… --format csv --out payments.csv`,

  init: `Usage: agentwallet init

Sets up a deployment, live with BASE_RPC_URL set: creates or migrates the database (DATABASE_URL, or SQLite
in the data directory for one machine) and records its mode and chain; writes a fresh master mnemonic to
AGENTWALLET_MASTER_MNEMONIC_FILE (default DATA_DIR/master-mnemonic), mode 0600, or takes the one there;
creates the first admin credential, printed once; and lists the relayer and treasury setup still to do.
Run again, it changes nothing and says so.

Example:
  DATABASE_URL=postgres://agentwallet@db.internal/wallet BASE_RPC_URL=https://mainnet.base.org AGENTWALLET_MASTER_MNEMONIC_FILE=/etc/agentwallet/master-mnemonic npm run -s agentwallet -- init`,

  doctor: `Usage: agentwallet doctor [--json]

Checks this deployment's configuration against reality and prints one line per check, ok, warn or FAIL,
with the fix: the database (reachable, migrated, its recorded mode and chain, the ledger verified); in live
mode the RPC (chain id, a recent head, the host's clock), USDC at USDC_ADDRESS (name, version, decimals,
EIP-712 domain), Multicall3, the relayer's ETH and its runway, the treasury; PUBLIC_BASE_URL (https in live
mode); the modes of the key file, SQLite files and data directory; Redis and Bridge when configured.
Changes nothing. Exit 1 when any check fails.

Example:
  npm run -s agentwallet -- doctor`,
};
