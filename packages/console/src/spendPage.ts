/**
 * The Spend page: where a project's money went in the current UTC day, week or month — by agent, by
 * counterparty, by rail and by day, each as a bar chart (inline SVG) with its figures in a table — and each
 * limited agent's burn against its limits, with when it reaches them at its rate so far.
 */
import type { BurnWindow, SpendLine, SpendPeriod, SpendReport } from "./backend.ts";
import { formatMicros, formatTime } from "./format.ts";
import { type Html, html, raw } from "./html.ts";
import { type PageContext, layout } from "./pages.ts";

const PERIOD_LABEL: Record<SpendPeriod, string> = { day: "Today", week: "This week", month: "This month" };
const INTERVAL_LABEL: Record<string, string> = { daily: "Daily", weekly: "Weekly", monthly: "Monthly" };

/** Lines a chart draws; the table below it lists up to TABLE_ROWS_MAX. */
const CHART_BARS_MAX = 10;
const TABLE_ROWS_MAX = 50;

const usd = (micros: number) => `$${formatMicros(micros)}`;
const escapeXml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Horizontal bars of amounts plus fees, labelled; the chart is an image to assistive technology, its table carries the figures. */
function barChart(id: string, title: string, lines: SpendLine[]): Html {
  const shown = lines.slice(0, CHART_BARS_MAX);
  if (!shown.length) return html``;
  const max = Math.max(1, ...shown.map((l) => l.amount_micros + l.fee_micros));
  const rowH = 26;
  const w = 600;
  const labelW = 230;
  const bars = shown.map((l, i) => {
    const y = i * rowH;
    const bw = Math.max(1, ((l.amount_micros + l.fee_micros) / max) * (w - labelW - 90));
    const label = l.label.length > 34 ? `${l.label.slice(0, 33)}…` : l.label;
    return `<text x="0" y="${y + 17}" font-size="12" fill="#1b1f29">${escapeXml(label)}</text>`
      + `<rect x="${labelW}" y="${y + 5}" width="${bw.toFixed(1)}" height="${rowH - 10}" fill="#1f4fd1"><title>${escapeXml(l.label)}: ${usd(l.amount_micros + l.fee_micros)}</title></rect>`
      + `<text x="${(labelW + bw + 6).toFixed(1)}" y="${y + 17}" font-size="12" fill="#1b1f29">${usd(l.amount_micros + l.fee_micros)}</text>`;
  });
  return html`<svg viewBox="0 0 ${w} ${shown.length * rowH}" role="img" aria-labelledby="${id}-h" class="spend-bars" data-chart="${id}"><title>${title}</title>${raw(bars.join(""))}</svg>`;
}

/** Bars per day of the period, amounts plus fees. */
function dayChart(days: SpendReport["by_day"]): Html {
  const max = Math.max(1, ...days.map((d) => d.amount_micros + d.fee_micros));
  const w = 600;
  const h = 120;
  const bw = w / days.length;
  const bars = days
    .filter((d) => d.amount_micros + d.fee_micros > 0)
    .map((d) => {
      const i = days.indexOf(d);
      const bh = Math.max(1, ((d.amount_micros + d.fee_micros) / max) * (h - 6));
      return `<rect x="${(i * bw + 1).toFixed(1)}" y="${(h - bh).toFixed(1)}" width="${Math.max(1, bw - 2).toFixed(1)}" height="${bh.toFixed(1)}" fill="#0f7a5a"><title>${d.day}: ${usd(d.amount_micros + d.fee_micros)}</title></rect>`;
    });
  return html`<svg viewBox="0 0 ${w} ${h}" role="img" aria-labelledby="by-day-h" class="spend-days" data-chart="by-day">${raw(bars.join(""))}<line x1="0" y1="${h - 0.5}" x2="${w}" y2="${h - 0.5}" stroke="#8a91a1"/></svg>`;
}

function linesTable(id: string, caption: string, nameHeader: string, lines: (SpendLine & { rail?: string })[]): Html {
  if (!lines.length) return html`<p>Nothing spent in this period.</p>`;
  const rest = lines.length - TABLE_ROWS_MAX;
  return html`<div class="table-wrap"><table class="cards-narrow" data-table="${id}">
<caption class="visually-hidden">${caption}</caption>
<thead><tr><th scope="col">${nameHeader}</th><th scope="col" class="num">Amounts</th><th scope="col" class="num">Fees</th><th scope="col" class="num">Total spent</th><th scope="col" class="num">Payments</th></tr></thead>
<tbody>${lines.slice(0, TABLE_ROWS_MAX).map(
    (l) => html`<tr data-key="${l.key}"><th scope="row" data-label="${nameHeader}" class="address">${l.label}</th>
<td data-label="Amounts" class="num" data-micros="${l.amount_micros}">${usd(l.amount_micros)}</td><td data-label="Fees" class="num" data-micros="${l.fee_micros}">${usd(l.fee_micros)}</td>
<td data-label="Total spent" class="num">${usd(l.amount_micros + l.fee_micros)}</td><td data-label="Payments" class="num">${l.payments}</td></tr>`,
  )}</tbody></table></div>
${rest > 0 ? html`<p class="muted">And ${rest} more, each below those shown.</p>` : ""}`;
}

function section(id: string, title: string, nameHeader: string, lines: SpendLine[]): Html {
  return html`<section aria-labelledby="${id}-h"><h2 id="${id}-h">${title}</h2>
${barChart(id, title, lines)}
${linesTable(id, title, nameHeader, lines)}
</section>`;
}

/** "limit reached around 14:20 UTC", with the date when it is not today. */
function projection(w: BurnWindow, asOf: string): string {
  if (w.spent_usd >= w.limit_usd) return "limit reached";
  if (!w.reached_at) return "not at this rate";
  const sameDay = w.reached_at.slice(0, 10) === asOf.slice(0, 10);
  return `at this rate: limit reached around ${sameDay ? "" : `${w.reached_at.slice(0, 10)} `}${w.reached_at.slice(11, 16)} UTC`;
}

function burnSection(report: SpendReport): Html {
  return html`<section aria-labelledby="burn-h"><h2 id="burn-h">Burn against limits</h2>
<p class="muted">Each agent's own limit windows now, as <code>GET /v1/limits</code> shows them to that token (its children's payments count in them too). The projection assumes spending goes on at the window's average rate so far.</p>
${report.burn.length
  ? html`<div class="table-wrap"><table class="cards-narrow" data-table="burn">
<caption class="visually-hidden">Spend against each agent's limits</caption>
<thead><tr><th scope="col">Agent</th><th scope="col">Window</th><th scope="col" class="num">Spent</th><th scope="col" class="num">Limit</th><th scope="col" class="num">Remaining</th><th scope="col">At this rate</th></tr></thead>
<tbody>${report.burn.flatMap((b) =>
      b.windows.map(
        (w) => html`<tr data-key="${b.token_id}:${w.interval}"><th scope="row" data-label="Agent">${b.label}</th>
<td data-label="Window">${INTERVAL_LABEL[w.interval] ?? w.interval} <span class="muted">from ${formatTime(w.window_start)}</span></td>
<td data-label="Spent" class="num" data-usd="${w.spent_usd}">$${w.spent_usd.toFixed(2)}</td><td data-label="Limit" class="num" data-usd="${w.limit_usd}">$${w.limit_usd.toFixed(2)}</td>
<td data-label="Remaining" class="num">$${w.remaining_usd.toFixed(2)}</td><td data-label="At this rate">${projection(w, report.as_of)}</td></tr>`,
      ),
    )}</tbody></table></div>`
  : html`<p>No active agent of this project has daily, weekly or monthly limits of its own.</p>`}
</section>`;
}

export function spendPage(pc: PageContext, report: SpendReport): Html {
  const base = `/console/p/${pc.project!.id}/spend`;
  const t = report.total;
  return layout(
    pc,
    `${pc.project!.name} — spend`,
    html`<h1>Spend</h1>
<nav aria-label="Period" class="tabs"><ul>${(["day", "week", "month"] as const).map((p) => html`<li><a href="${base}?period=${p}"${p === report.period ? raw(' aria-current="page"') : ""}>${PERIOD_LABEL[p]}</a></li>`)}</ul></nav>
<p>${PERIOD_LABEL[report.period]} (UTC): ${formatTime(report.window_start)} to ${formatTime(report.window_end)}, as of ${formatTime(report.as_of)}.</p>
<div class="cards">
<div class="card"><div class="label">Total spent (amounts plus fees)</div><div class="value" data-figure="total">${usd(t.amount_micros + t.fee_micros)}</div></div>
<div class="card"><div class="label">Against limits (amounts only)</div><div class="value" data-figure="amounts">${usd(t.amount_micros)}</div></div>
<div class="card"><div class="label">Payments</div><div class="value" data-figure="payments">${t.payments}</div></div>
</div>
<p class="muted">Total spent is what left the balance: each payment's amount plus its fee. Limits count amounts only — what reached the payee — so an agent's spend against its limits is its amounts, never its fees. Failed and reversed payments count in neither; payments still open or awaiting approval count in both.</p>
${section("by-agent", "By agent", "Agent", report.by_agent)}
${section("by-counterparty", "By counterparty", "Counterparty", report.by_counterparty)}
${section("by-rail", "By rail", "Rail", report.by_rail)}
<section aria-labelledby="by-day-h"><h2 id="by-day-h">By day</h2>
${dayChart(report.by_day)}
</section>
${burnSection(report)}`,
  );
}
