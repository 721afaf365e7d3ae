/**
 * PostgreSQL functions that run a batch of holds or of resolutions in one round trip (created by
 * migration 0003 and replaced by later ones, each constant naming its migration; pgHolds.ts and pgResolves.ts call
 * them). The text a migration ran stays as it was: a change is a new constant and a new migration. A function's statements run one after the
 * other, each seeing the ones before: the balance row is locked by one statement and changed by later
 * ones, which a single statement cannot do reliably (a row locked and updated by one statement may be
 * judged against a stale value, or its update skipped, when another transaction changed it meanwhile).
 *
 * Rows arrive as JSON built by the ledger with every column of the row (transactions and journal
 * entries without `seq`, drawn here from their sequences, and transactions without `pos`).
 */

/**
 * How aw_hold_batch writes a held payment's rows: the variables it declares for them, what it does for each held
 * payment in its loop, and what it does after the loop.
 */
type HeldRows = { declare: string; held: string; after: string };

/** Migrations 0007 to 0036: each held payment's rows inserted in its turn of the loop, one statement per row. */
const ROWS_PER_HOLD: HeldRows = {
  declare: "",
  held: `      insert into payments select * from jsonb_populate_record(null::payments, v_hold->'payment');
      for v_row, v_k in select e.value, e.ordinality from jsonb_array_elements(v_hold->'transactions') with ordinality e loop
        insert into transactions select * from jsonb_populate_record(null::transactions,
          v_row || jsonb_build_object('seq', nextval(pg_get_serial_sequence('transactions', 'seq')), 'pos', v_count + 2 * v_held - 2 + v_k));
      end loop;
      for v_row in select e.value from jsonb_array_elements(v_hold->'journal') e loop
        insert into journal_entries select * from jsonb_populate_record(null::journal_entries,
          v_row || jsonb_build_object('seq', nextval(pg_get_serial_sequence('journal_entries', 'seq'))));
      end loop;
`,
  after: "",
};

/**
 * Migration 0037: the held payments' rows collected in the loop (numbered in the same order) and inserted after it,
 * one statement per table. The statement triggers on payments and transactions (the day and transaction counters,
 * spendDays.ts and migrations.ts) then run once per batch, not once per row, and note one change per counter.
 */
const ROWS_PER_BATCH: HeldRows = {
  declare: `  v_payments jsonb := '[]';
  v_transactions jsonb := '[]';
  v_journal jsonb := '[]';
`,
  held: `      v_payments := v_payments || jsonb_build_array(v_hold->'payment');
      for v_row, v_k in select e.value, e.ordinality from jsonb_array_elements(v_hold->'transactions') with ordinality e loop
        v_transactions := v_transactions || jsonb_build_array(
          v_row || jsonb_build_object('seq', nextval(pg_get_serial_sequence('transactions', 'seq')), 'pos', v_count + 2 * v_held - 2 + v_k));
      end loop;
      for v_row in select e.value from jsonb_array_elements(v_hold->'journal') e loop
        v_journal := v_journal || jsonb_build_array(v_row || jsonb_build_object('seq', nextval(pg_get_serial_sequence('journal_entries', 'seq'))));
      end loop;
`,
  after: `    insert into payments select * from jsonb_populate_recordset(null::payments, v_payments);
    insert into transactions select * from jsonb_populate_recordset(null::transactions, v_transactions);
    insert into journal_entries select * from jsonb_populate_recordset(null::journal_entries, v_journal);
`,
};

/**
 * Migration 0040: as 0037's, but collected in arrays of jsonb, which PL/pgSQL appends to in place. 0037 appended to a
 * jsonb array, which copies the whole array at each append: quadratic in the batch (a batch of 64 holds copied its
 * transactions' JSON about 64 times), under the project's balance lock.
 */
const rowsOf = (table: string, v: string) => `select r.* from unnest(${v}) with ordinality x(j, n), jsonb_populate_record(null::${table}, x.j) r order by x.n`;
const ROWS_IN_ARRAYS: HeldRows = {
  declare: ROWS_PER_BATCH.declare.replaceAll(" jsonb := '[]';", " jsonb[] := '{}';"),
  held: ROWS_PER_BATCH.held.replaceAll("|| jsonb_build_array(", "|| ("),
  after: ROWS_PER_BATCH.after
    .replace("select * from jsonb_populate_recordset(null::payments, v_payments)", rowsOf("payments", "v_payments"))
    .replace("select * from jsonb_populate_recordset(null::transactions, v_transactions)", rowsOf("transactions", "v_transactions"))
    .replace("select * from jsonb_populate_recordset(null::journal_entries, v_journal)", rowsOf("journal_entries", "v_journal")),
};
for (const [part, text] of Object.entries(ROWS_IN_ARRAYS)) {
  if (/jsonb_build_array|jsonb_populate_recordset|'\[\]'/.test(text)) throw new Error(`ROWS_PER_BATCH changed shape: migration 0040's ${part} can no longer be derived`);
}

/**
 * Holds of one project, judged in order: each is held if what the ones before it left covers its
 * total, else refused (and the next ones are still judged). The held ones' payment, transactions
 * (positions after the project's count, fee then rail) and journal rows are inserted, and the balance
 * row is changed once. One row per hold: whether it was held, and what was available after it was
 * judged (for a refused hold: what was available to it).
 */
const HOLD_BATCH = `
create or replace function aw_hold_batch(p_project text, p_holds jsonb)
returns table (hold_index integer, held boolean, available_after bigint)
language plpgsql as $fn$
declare
  v_available bigint;
  v_count bigint;
  v_taken bigint := 0;
  v_held integer := 0;
  v_hold jsonb;
  v_index bigint;
  v_total bigint;
  v_row jsonb;
  v_k bigint;
begin
  select b.available_micros, b.tx_count into v_available, v_count from balances b where b.project_id = p_project for update;
  if not found then
    raise exception 'project % has no balance row', p_project;
  end if;
  for v_hold, v_index in select e.value, e.ordinality from jsonb_array_elements(p_holds) with ordinality e loop
    v_total := (v_hold->>'total')::bigint;
    hold_index := v_index;
    held := v_available >= v_total;
    if held then
      v_available := v_available - v_total;
      v_taken := v_taken + v_total;
      v_held := v_held + 1;
${ROWS_PER_HOLD.held}    end if;
    available_after := v_available;
    return next;
  end loop;
  if v_held > 0 then
    update balances set available_micros = available_micros - v_taken, held_micros = held_micros + v_taken,
      total_spent_micros = total_spent_micros + v_taken, tx_count = tx_count + 2 * v_held
    where project_id = p_project;
  end if;
end
$fn$`;

/**
 * Resolutions, in order, each as payments.resolve alone does it: the payment leaves pending/processing
 * at most once (a second resolution of it in the batch finds it final and changes nothing), then its
 * balance row, journal movement and transactions. The balance rows are locked first, in project order,
 * as a hold locks its balance row before its payment: so a resolution and a hold never wait for each
 * other both ways. Accounts as `account` in accounts.ts names them. One row per payment changed: its index
 * in the batch and the row as it is now.
 */
const RESOLVE_BATCH = `
create or replace function aw_resolve_batch(p_items jsonb)
returns table (item_index integer, payment jsonb)
language plpgsql as $fn$
declare
  v_item jsonb;
  v_index bigint;
  v_row payments;
  v_total bigint;
begin
  perform 1 from balances b
    where b.project_id in (select p.project_id from payments p where p.id in (select e->>'id' from jsonb_array_elements(p_items) e))
    order by b.project_id for update;
  for v_item, v_index in select e.value, e.ordinality from jsonb_array_elements(p_items) with ordinality e loop
    update payments p set
      status = v_item->>'outcome',
      updated_at = v_item->>'at',
      completed_at = case when v_item->>'outcome' = 'completed' then v_item->>'at' else null end,
      lease_owner = null, lease_until = null, in_flight_until = null,
      tx_hash = case when (v_item->>'set_tx_hash')::boolean then v_item->>'tx_hash' else p.tx_hash end,
      failure_reason = case when (v_item->>'set_failure_reason')::boolean then v_item->>'failure_reason' else p.failure_reason end,
      failure_code = case when (v_item->>'set_failure_code')::boolean then v_item->>'failure_code' else p.failure_code end,
      response_json = case when (v_item->>'set_response_json')::boolean then v_item->>'response_json' else p.response_json end
    where p.id = v_item->>'id' and p.status in ('pending', 'processing')
    returning p.* into v_row;
    if found then
      v_total := v_row.amount_micros + v_row.fee_micros;
      if v_row.status = 'completed' then
        update balances set held_micros = held_micros - v_total where project_id = v_row.project_id;
        insert into journal_entries (movement_id, kind, account, project_id, amount_micros, created_at)
          select v_item->>'movement_id', 'post', e.account, e.project_id, e.amount, v_row.updated_at
          from (values ('project:' || v_row.project_id || ':held', v_row.project_id, -v_total),
                       ('world:payouts', null, v_row.amount_micros),
                       ('revenue:fees', null, v_row.fee_micros)) e(account, project_id, amount)
          where e.amount <> 0;
      else
        update balances set held_micros = held_micros - v_total, available_micros = available_micros + v_total,
          total_spent_micros = total_spent_micros - v_total
        where project_id = v_row.project_id;
        insert into journal_entries (movement_id, kind, account, project_id, amount_micros, created_at)
          select v_item->>'movement_id', 'void', e.account, v_row.project_id, e.amount, v_row.updated_at
          from (values ('project:' || v_row.project_id || ':held', -v_total),
                       ('project:' || v_row.project_id || ':available', v_total)) e(account, amount)
          where e.amount <> 0;
      end if;
      update transactions set status = v_row.status, completed_at = v_row.completed_at where payment_id = v_row.id;
      item_index := v_index;
      payment := to_jsonb(v_row);
      return next;
    end if;
  end loop;
end
$fn$`;

/**
 * Migration 0003's resolution batch, as it created it: the one above without the `failure_code` line, which
 * migration 0004 added with its column. Both migrations ran on deployed databases, so 0003 must still create
 * exactly its own text when a database is built fresh; it is derived here rather than kept as a second copy.
 */
const FAILURE_CODE_LINE = "      failure_code = case when (v_item->>'set_failure_code')::boolean then v_item->>'failure_code' else p.failure_code end,\n";
if (!RESOLVE_BATCH.includes(FAILURE_CODE_LINE)) throw new Error("aw_resolve_batch lost its failure_code line: migration 0003's text can no longer be derived");
const RESOLVE_BATCH_0003 = RESOLVE_BATCH.replace(FAILURE_CODE_LINE, "");

/**
 * Migration 0039's resolution batch: as 0004's, but the resolved payments' transactions are updated after the loop
 * with one statement, so the transaction counters' statement trigger (migrations.ts) runs once per batch, not once
 * per payment. Each transaction takes its payment's new status and completion time, found by the payments' ids:
 * an id list read through both tables' indexes whatever their size (a JSON list joined on `payment_id` was planned
 * as a scan of every transaction below about 30,000 of them).
 */
const TXN_LINE = "      update transactions set status = v_row.status, completed_at = v_row.completed_at where payment_id = v_row.id;\n";
const LOOP_END = "  end loop;\nend\n$fn$";
if (!RESOLVE_BATCH.includes(TXN_LINE) || !RESOLVE_BATCH.endsWith(LOOP_END)) throw new Error("aw_resolve_batch changed shape: migration 0039's text can no longer be derived");
const RESOLVE_BATCH_TXNS_AT_ONCE = RESOLVE_BATCH.replace("  v_total bigint;\n", "  v_total bigint;\n  v_resolved text[] := '{}';\n")
  .replace(TXN_LINE, "      v_resolved := v_resolved || v_row.id;\n")
  .replace(LOOP_END, `  end loop;
  update transactions t set status = p.status, completed_at = p.completed_at
    from payments p where p.id = any(v_resolved) and t.payment_id = p.id;
end
$fn$`);

/** Migration 0003's functions, as it created them. */
export const PG_BATCH_FUNCTIONS = [HOLD_BATCH, RESOLVE_BATCH_0003];
/** Migration 0004: the resolution batch that also stores `failure_code` (the one in use). */
export const PG_RESOLVE_BATCH_0004 = RESOLVE_BATCH;

/**
 * aw_hold_batch with spending windows (migration 0007 replaces the function above with this one).
 * Each hold may carry `amount` (the payment amount, micro-USDC) and `windows`
 * ([{scope_id, kind, start, limit}], spending.ts): a hold the balance covers is then judged against
 * every window's counter — its spent plus the amount must not pass the limit — and only if all fit are
 * the counters moved, each by a conditional upsert (`… where spent_micros + amount <= limit`). The
 * balance row's lock, taken first, keeps every other writer of the project's counters (holds and
 * resolutions of the same project) out meanwhile, so the judgement holds; a conditional update that
 * still does not fit is a broken invariant and fails the call. A refused window is answered by its
 * index (1-based) and what was spent in it.
 */
/** aw_hold_batch with windows: how a window's spent is read (into v_spent) and how a held payment moves the counters vary by migration. */
function holdBatchWithWindows(readSpent: string, moveCounters: string, rows: HeldRows = ROWS_PER_HOLD): string {
  return `
create function aw_hold_batch(p_project text, p_holds jsonb)
returns table (hold_index integer, held boolean, available_after bigint, refused_window integer, window_spent bigint)
language plpgsql as $fn$
declare
  v_available bigint;
  v_count bigint;
  v_taken bigint := 0;
  v_held integer := 0;
  v_hold jsonb;
  v_index bigint;
  v_total bigint;
  v_amount bigint;
  v_row jsonb;
  v_k bigint;
  v_w jsonb;
  v_wi bigint;
  v_spent bigint;
${rows.declare}begin
  select b.available_micros, b.tx_count into v_available, v_count from balances b where b.project_id = p_project for update;
  if not found then
    raise exception 'project % has no balance row', p_project;
  end if;
  for v_hold, v_index in select e.value, e.ordinality from jsonb_array_elements(p_holds) with ordinality e loop
    v_total := (v_hold->>'total')::bigint;
    v_amount := coalesce((v_hold->>'amount')::bigint, 0);
    hold_index := v_index;
    refused_window := null;
    window_spent := null;
    held := v_available >= v_total;
    if held then
      for v_w, v_wi in select e.value, e.ordinality from jsonb_array_elements(coalesce(v_hold->'windows', '[]'::jsonb)) with ordinality e loop
${readSpent}        if v_spent + v_amount > (v_w->>'limit')::bigint then
          held := false;
          refused_window := v_wi;
          window_spent := v_spent;
          exit;
        end if;
      end loop;
    end if;
    if held then
${moveCounters}      v_available := v_available - v_total;
      v_taken := v_taken + v_total;
      v_held := v_held + 1;
${rows.held}    end if;
    available_after := v_available;
    return next;
  end loop;
  if v_held > 0 then
${rows.after}    update balances set available_micros = available_micros - v_taken, held_micros = held_micros + v_taken,
      total_spent_micros = total_spent_micros + v_taken, tx_count = tx_count + 2 * v_held
    where project_id = p_project;
  end if;
end
$fn$`;
}

const HOLD_BATCH_WITH_WINDOWS = holdBatchWithWindows(
  `        v_spent := coalesce((select w.spent_micros from spend_windows w
          where w.scope_id = v_w->>'scope_id' and w.kind = v_w->>'kind' and w.window_start = v_w->>'start'), 0);
`,
  `      for v_w in select e.value from jsonb_array_elements(coalesce(v_hold->'windows', '[]'::jsonb)) e loop
        insert into spend_windows as w (scope_id, kind, window_start, spent_micros)
          values (v_w->>'scope_id', v_w->>'kind', v_w->>'start', v_amount)
          on conflict (scope_id, kind, window_start) do update set spent_micros = w.spent_micros + excluded.spent_micros
          where w.spent_micros + excluded.spent_micros <= (v_w->>'limit')::bigint;
        if not found then
          raise exception 'spending window % of project % moved under the balance lock', v_w, p_project;
        end if;
      end loop;
`,
);

/**
 * aw_hold_batch counting every payment in its windows (migration 0022 replaces 0007's with this one).
 * Each hold carries `windows`, the limited ones ({scope_id, kind, start, limit, token_id, from, to}),
 * and `counted`, every counter key of the payment's windows ([scope id, kind, start], spending.ts). A
 * limited window without a row gets one first, written as the sum of its payments that are neither
 * failed nor reversed (of the token, or of the whole project; created_at in [from, to)), so a limit set
 * mid-window counts what was spent before it. A held payment then adds its amount to every existing
 * row of `counted`, limited or not: an existing row stays equal to its window's sum. The balance row's
 * lock, taken first, keeps every other writer of the project's counters and payments out meanwhile
 * (holds, and resolutions and reversals, which lock the balance row before the payment's).
 */
/** A held payment adds its amount to every existing counter of its windows (migrations 0022 and 0027). */
const MOVE_COUNTED = `      update spend_windows w set spent_micros = w.spent_micros + v_amount
        from jsonb_array_elements(coalesce(v_hold->'counted', '[]'::jsonb)) e
        where w.scope_id = e.value->>0 and w.kind = e.value->>1 and w.window_start = e.value->>2;
`;

const HOLD_BATCH_COUNTING_WINDOWS = holdBatchWithWindows(
  `        select w.spent_micros into v_spent from spend_windows w
          where w.scope_id = v_w->>'scope_id' and w.kind = v_w->>'kind' and w.window_start = v_w->>'start';
        if not found then
          select coalesce(sum(p.amount_micros), 0) into v_spent from payments p
            where p.project_id = p_project and (v_w->>'token_id' is null or p.token_id = v_w->>'token_id')
              and p.created_at >= v_w->>'from' and p.created_at < v_w->>'to' and p.status not in ('failed', 'reversed');
          insert into spend_windows (scope_id, kind, window_start, spent_micros)
            values (v_w->>'scope_id', v_w->>'kind', v_w->>'start', v_spent);
        end if;
`,
  MOVE_COUNTED,
);

/**
 * aw_hold_batch with nested budgets (migration 0027 replaces 0022's with this one): as 0022's, but a token's
 * window without a row is seeded with the payments of the token and of every descendant (`token_lineage`),
 * as a descendant's hold counts in each ancestor's windows (`counted` lists them).
 */
const HOLD_BATCH_NESTED = holdBatchWithWindows(
  `        select w.spent_micros into v_spent from spend_windows w
          where w.scope_id = v_w->>'scope_id' and w.kind = v_w->>'kind' and w.window_start = v_w->>'start';
        if not found then
          select coalesce(sum(p.amount_micros), 0) into v_spent from payments p
            where p.project_id = p_project
              and (v_w->>'token_id' is null or p.token_id = v_w->>'token_id'
                or p.token_id in (select l.descendant_id from token_lineage l where l.ancestor_id = v_w->>'token_id'))
              and p.created_at >= v_w->>'from' and p.created_at < v_w->>'to' and p.status not in ('failed', 'reversed');
          insert into spend_windows (scope_id, kind, window_start, spent_micros)
            values (v_w->>'scope_id', v_w->>'kind', v_w->>'start', v_spent);
        end if;
`,
  MOVE_COUNTED,
);

/**
 * How a hold function reads a limited window without a row (migrations 0036, 0037 and 0040): the sum of the day counters
 * over its days, of this transaction's notes not yet moved into them, and of `also` (more rows of token_id, day and
 * amount_micros, each line after a union all).
 */
const seedFromDays = (also = "") =>
  `        select w.spent_micros into v_spent from spend_windows w
          where w.scope_id = v_w->>'scope_id' and w.kind = v_w->>'kind' and w.window_start = v_w->>'start';
        if not found then
          select coalesce(sum(d.amount_micros), 0) into v_spent from (
              select c.token_id, c.day, c.amount_micros from spend_day_changes c where c.xid = txid_current() and c.project_id = p_project
              union all
              select s.token_id, s.day, s.amount_micros from spend_days s where s.project_id = p_project${also}) d
            where (v_w->>'token_id' is null or d.token_id = v_w->>'token_id'
                or d.token_id in (select l.descendant_id from token_lineage l where l.ancestor_id = v_w->>'token_id'))
              and d.day >= left(v_w->>'from', 10) and d.day < left(v_w->>'to', 10);
          insert into spend_windows (scope_id, kind, window_start, spent_micros)
            values (v_w->>'scope_id', v_w->>'kind', v_w->>'start', v_spent);
        end if;
`;

/**
 * aw_hold_batch seeding from the day counters (migration 0036 replaces 0027's with this one): a limited window
 * without a row is written as the sum of `spend_days` over the window's days (every window starts and ends at a
 * UTC midnight, and those counters hold the same payments: spendDays.ts), plus what this transaction has noted
 * and not yet moved there (`spend_day_changes`, moved at commit): a hold of this batch authenticated before the
 * limit was set judged no window, so it seeded none, and counts only through these notes. 0027's summed the
 * window's payments, a read that grows with them: a token's first hold in a new window, or in its all-time
 * allowance, read every payment of its branch while holding the project's balance lock.
 */
const HOLD_BATCH_FROM_DAYS = holdBatchWithWindows(
  seedFromDays(),
  MOVE_COUNTED,
);

/**
 * aw_hold_batch inserting its held rows once per batch (migration 0037 replaces 0036's with this one: ROWS_PER_BATCH).
 * The seed is 0036's, plus the payments this call has held and not yet inserted, which no day counter or note holds yet.
 */
const heldSoFar = (from: string) => `\n              union all
              select coalesce(p.token_id, ''), left(p.created_at, 10), p.amount_micros from ${from}
                where p.status not in ('failed', 'reversed')`;
const HOLD_BATCH_ROWS_AT_ONCE = holdBatchWithWindows(seedFromDays(heldSoFar("jsonb_populate_recordset(null::payments, v_payments) p")), MOVE_COUNTED, ROWS_PER_BATCH);

/** aw_hold_batch collecting its held rows in arrays (migration 0040 replaces 0037's with this one: ROWS_IN_ARRAYS). */
const HOLD_BATCH_ROWS_IN_ARRAYS = holdBatchWithWindows(seedFromDays(heldSoFar("unnest(v_payments) x(j), jsonb_populate_record(null::payments, x.j) p")), MOVE_COUNTED, ROWS_IN_ARRAYS);

/**
 * A payment that fails or is reversed gives its amount back to each window counter it was counted in
 * (`payments.spend_windows`), in the same transaction as the status change, whichever path changes it
 * (a resolution alone or in a batch, a reversal, a denied or expired approval).
 */
const RELEASE_SPENDING = `
create function aw_release_spending() returns trigger
language plpgsql as $fn$
begin
  update spend_windows w set spent_micros = w.spent_micros - new.amount_micros
  from jsonb_array_elements(new.spend_windows::jsonb) e
  where w.scope_id = e->>0 and w.kind = e->>1 and w.window_start = e->>2;
  return null;
end
$fn$`;

const RELEASE_SPENDING_TRIGGER = `
create trigger payments_release_spending after update of status on payments for each row
when (new.spend_windows is not null and new.status in ('failed', 'reversed') and old.status not in ('failed', 'reversed'))
execute function aw_release_spending()`;

/** Migration 0007 on PostgreSQL: the hold function with windows (replacing 0003's) and the release trigger. */
export const PG_SPENDING_FUNCTIONS = ["drop function aw_hold_batch(text, jsonb)", HOLD_BATCH_WITH_WINDOWS, RELEASE_SPENDING, RELEASE_SPENDING_TRIGGER];

/** Migration 0022 on PostgreSQL: the hold function that counts every payment in its windows (replacing 0007's). */
export const PG_COUNTING_HOLD_FUNCTIONS = ["drop function aw_hold_batch(text, jsonb)", HOLD_BATCH_COUNTING_WINDOWS];

/** Migration 0027 on PostgreSQL: the hold function that seeds a token's windows with its descendants' payments. */
export const PG_NESTED_HOLD_FUNCTIONS = ["drop function aw_hold_batch(text, jsonb)", HOLD_BATCH_NESTED];

/** Migration 0036 on PostgreSQL: the hold function that seeds a window from the day counters. */
export const PG_DAYS_HOLD_FUNCTIONS = ["drop function aw_hold_batch(text, jsonb)", HOLD_BATCH_FROM_DAYS];

/** Migration 0037 on PostgreSQL: the hold function that inserts a batch's held rows with one statement per table. */
export const PG_BATCH_ROWS_HOLD_FUNCTIONS = ["drop function aw_hold_batch(text, jsonb)", HOLD_BATCH_ROWS_AT_ONCE];

/** Migration 0040 on PostgreSQL: the hold function that collects its held rows in arrays appended in place. */
export const PG_ARRAY_ROWS_HOLD_FUNCTIONS = ["drop function aw_hold_batch(text, jsonb)", HOLD_BATCH_ROWS_IN_ARRAYS];

/** Migration 0039 on PostgreSQL: the resolution batch that updates the batch's transactions with one statement. */
export const PG_RESOLVE_BATCH_0039 = RESOLVE_BATCH_TXNS_AT_ONCE;

/**
 * Migration 0041's resolution batch: as 0039's, and a resolution may also replace the payment's rail state (a
 * completed USDC transfer's `Transfer` logs, stored with its completion instead of by a write of their own just
 * before it). An item without `set_rail_state` keeps the stored state, as before.
 */
const RESPONSE_JSON_LINE = "      response_json = case when (v_item->>'set_response_json')::boolean then v_item->>'response_json' else p.response_json end\n";
if (!RESOLVE_BATCH_TXNS_AT_ONCE.includes(RESPONSE_JSON_LINE)) throw new Error("aw_resolve_batch lost its response_json line: migration 0041's text can no longer be derived");
export const PG_RESOLVE_BATCH_0041 = RESOLVE_BATCH_TXNS_AT_ONCE.replace(
  RESPONSE_JSON_LINE,
  RESPONSE_JSON_LINE.replace(/\n$/, ",\n") + "      rail_state = case when (v_item->>'set_rail_state')::boolean then v_item->>'rail_state' else p.rail_state end\n",
);

/** Migration 0007 on SQLite: the same release as a trigger. */
export const SQLITE_RELEASE_SPENDING_TRIGGER = `
create trigger payments_release_spending after update of status on payments for each row
when new.spend_windows is not null and new.status in ('failed', 'reversed') and old.status not in ('failed', 'reversed')
begin
  update spend_windows set spent_micros = spent_micros - new.amount_micros
  where (scope_id, kind, window_start) in
    (select json_extract(e.value, '$[0]'), json_extract(e.value, '$[1]'), json_extract(e.value, '$[2]') from json_each(new.spend_windows) e);
end`;
