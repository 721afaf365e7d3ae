/**
 * PostgreSQL functions that run a batch of holds or of resolutions in one round trip (created by
 * migration 0003; pgHolds.ts and pgResolves.ts call them). A function's statements run one after the
 * other, each seeing the ones before: the balance row is locked by one statement and changed by later
 * ones, which a single statement cannot do reliably (a row locked and updated by one statement may be
 * judged against a stale value, or its update skipped, when another transaction changed it meanwhile).
 *
 * Rows arrive as JSON built by the ledger with every column of the row (transactions and journal
 * entries without `seq`, drawn here from their sequences, and transactions without `pos`).
 */

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
      insert into payments select * from jsonb_populate_record(null::payments, v_hold->'payment');
      for v_row, v_k in select e.value, e.ordinality from jsonb_array_elements(v_hold->'transactions') with ordinality e loop
        insert into transactions select * from jsonb_populate_record(null::transactions,
          v_row || jsonb_build_object('seq', nextval(pg_get_serial_sequence('transactions', 'seq')), 'pos', v_count + 2 * v_held - 2 + v_k));
      end loop;
      for v_row in select e.value from jsonb_array_elements(v_hold->'journal') e loop
        insert into journal_entries select * from jsonb_populate_record(null::journal_entries,
          v_row || jsonb_build_object('seq', nextval(pg_get_serial_sequence('journal_entries', 'seq'))));
      end loop;
    end if;
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
 * Resolutions, in order, each as Ledger.resolve alone does it: the payment leaves pending/processing
 * at most once (a second resolution of it in the batch finds it final and changes nothing), then its
 * balance row, journal movement and transactions. The balance rows are locked first, in project order,
 * as a hold locks its balance row before its payment: so a resolution and a hold never wait for each
 * other both ways. Accounts as `account` in store.ts names them. One row per payment changed: its index
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

export const PG_BATCH_FUNCTIONS = [HOLD_BATCH, RESOLVE_BATCH];
