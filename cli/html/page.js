// cli/html/page.js: the script of `syncspy html`'s page (compiled into the program by the
// Makefile; cli/html.c writes it inline after the JSON block it reads). It draws what the JSON
// holds and computes no figure of its own that the report shows: the report's numbers come
// formatted from the CLI. It never asks the network for anything (no fetch, no URL).
"use strict";
(function () {
  const startedAt = performance.now();
  const DATA = JSON.parse(document.getElementById("syncspy-data").textContent);
  const parsedAt = performance.now();
  const S = DATA.strings,
    F = DATA.frames;
  const COLORS = ["#2f6fdf", "#f79009", "#12b76a", "#e04f5f", "#7a5af8", "#0ba5ec", "#ee46bc", "#84a33c"];
  const OTHER = "#98a2b3",
    IDLE = "#e4e7ec";
  const ROWS_SHOWN = 300,
    BARS_MAX = 1200;
  const FLAME_PROCS = 16; // a merged flame graph has one root per process up to this many

  // ---- helpers ---------------------------------------------------------------------------
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k === "class") e.className = attrs[k];
      else if (k === "text") e.textContent = attrs[k];
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    for (const c of kids)
      if (c != null) e.append(c);
    return e;
  }
  const SVGNS = "http://www.w3.org/2000/svg";

  function sv(tag, attrs) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    return e;
  }
  // the report's formats (output/report.c: fmt_ns, fmt_rate)
  function sig3(v, unit) {
    return (v < 9.995 ? v.toFixed(2) : v < 99.95 ? v.toFixed(1) : v.toFixed(0)) + unit;
  }

  function fmtNs(ns) {
    return ns < 999.5 ? ns.toFixed(0) + " ns" : ns < 999.5e3 ? sig3(ns / 1e3, " us")
      : ns < 999.5e6 ? sig3(ns / 1e6, " ms") : sig3(ns / 1e9, " s");
  }
  const fmtRate = (v) => sig3(v, "");
  const pct = (v) => (100 * v).toFixed(1) + "%";

  function baseName(p) {
    const i = (p || "").lastIndexOf("/");
    return i < 0 ? p || "" : p.slice(i + 1);
  }

  function shortPath(p) {
    const parts = (p || "").split("/");
    return parts.length > 2 ? ".../" + parts.slice(-2).join("/") : p || "";
  }
  // A frame is FRAME_FIELDS numbers of DATA.frames (cli/html.c struct pframe): its function,
  // file, line, module (ids of DATA.strings) and flags, whose bits are these
  const FRAME_FIELDS = 5,
    FRAME_FLAGS = 4;
  const FLAG_PYTHON = 1; // a Python frame
  const FLAG_RUNTIME = 2; // the runtime's or a framework's (hints_frame_is_runtime)
  const FLAG_BACKWARD = 4; // a backward sync's marker: the forward stack that made its node follows
  const FLAG_CALLER = 8; // a backward sync's marker: the stack that called backward() follows
  const FLAG_UNSEEN = 16; // a backward sync with no forward line: the function says why
  const flagsOf = (i) => F[FRAME_FIELDS * i + FRAME_FLAGS];

  function frame(i) {
    const k = FRAME_FIELDS * i,
      flags = F[k + FRAME_FLAGS];
    return {
      fn: S[F[k]],
      file: S[F[k + 1]],
      line: F[k + 2],
      module: S[F[k + 3]],
      py: !!(flags & FLAG_PYTHON),
      runtime: !!(flags & FLAG_RUNTIME),
      backward: !!(flags & FLAG_BACKWARD),
      caller: !!(flags & FLAG_CALLER),
      unseen: !!(flags & FLAG_UNSEEN)
    };
  }
  // A site of DATA.runs[].sites (cli/html.c write_sites): [process, api, line, count, blocked_ns, [frames]]
  const SITE_PROC = 0,
    SITE_API = 1,
    SITE_BLOCKED_NS = 4,
    SITE_FRAMES = 5;

  function frameLabel(f) {
    if (f.py || f.file) return f.fn + " (" + baseName(f.file) + (f.line ? ":" + f.line : "") + ")";
    return f.fn || "??";
  }
  // the report's "where" (cli_line_where: display names), its file by its base name
  function lineShort(l) {
    const w = l.file ? l.where.replace(l.file, baseName(l.file)) : l.where;
    return w.startsWith("at ") ? w.slice(3) : w;
  }

  const tip = el("div", {
    id: "tip"
  });

  function showTip(ev, html) {
    tip.innerHTML = html;
    tip.style.display = "block";
    const w = tip.offsetWidth,
      h = tip.offsetHeight;
    let x = ev.clientX + 14,
      y = ev.clientY + 14;
    if (x + w > window.innerWidth - 8) x = ev.clientX - w - 14;
    if (y + h > window.innerHeight - 8) y = ev.clientY - h - 14;
    tip.style.left = x + "px";
    tip.style.top = y + "px";
  }

  function hideTip() {
    tip.style.display = "none";
  }

  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({
      "&": "&amp;",
      "<": "&lt;",
      ">": "&gt;",
      '"': "&quot;",
      "'": "&#39;"
    })[c]);
  }
  // the width of a card's inside, read once per layout (reading it after drawing forces one)
  let widthCache = 0;

  function cardWidth() {
    if (!widthCache) widthCache = Math.min(document.documentElement.clientWidth || 1200, 1500) - 48 - 34;
    return Math.max(widthCache, 320);
  }

  function card(title, note) {
    const h = el("h2", {}, title);
    if (note) h.append(el("span", {
      class: "note",
      text: note
    }));
    return el("section", {
      class: "card"
    }, h);
  }

  // The report's header: its text up to the first blank line (the table follows it).
  function headerText(run) {
    const i = run.report.indexOf("\n\n");
    return i < 0 ? run.report.replace(/\n+$/, "") : run.report.slice(0, i);
  }

  // ---- per step: one process, or all merged (the mean process-step) ---------------------------
  function stepSeries(run, sel) {
    const procs = sel < 0 ? run.procs : [run.procs[sel]];
    const byStep = new Map();
    const ntop = run.top.length;
    let hasLines = procs.length > 0;
    for (const p of procs)
      if (!p.steps.by_line) hasLines = false;
    const apart = {
      startup: null,
      open: null
    };
    for (const p of procs) {
      const st = p.steps;
      for (let i = 0; i < st.step.length; i++) {
        const kind = st.kind[i];
        if (kind !== 0) {
          const key = kind === 1 ? "startup" : "open";
          const a = apart[key] || (apart[key] = {
            wall: 0,
            blocked: 0,
            syncs: 0,
            n: 0,
            step: st.step[i]
          });
          a.wall += st.wall[i];
          a.blocked += st.blocked[i];
          a.syncs += st.syncs[i];
          a.n++;
          continue;
        }
        let s = byStep.get(st.step[i]);
        if (!s) byStep.set(st.step[i], s = {
          step: st.step[i],
          wall: 0,
          blocked: 0,
          syncs: 0,
          launches: 0,
          n: 0,
          lines: new Float64Array(ntop)
        });
        s.wall += st.wall[i];
        s.blocked += st.blocked[i];
        s.syncs += st.syncs[i];
        s.launches += st.launches[i];
        s.n++;
        if (hasLines)
          for (let t = 0; t < ntop; t++) s.lines[t] += p.steps.by_line[t][i];
      }
    }
    const steps = Array.from(byStep.values()).sort((a, b) => a.step - b.step);
    for (const s of steps)
      if (s.n > 1) {
        s.wall /= s.n;
        s.blocked /= s.n;
        s.syncs /= s.n;
        s.launches /= s.n;
        for (let t = 0; t < ntop; t++) s.lines[t] /= s.n;
      }
    // a start-up the schedule did not record as a step: the header's own figures of it
    if (!apart.startup)
      for (const p of procs)
        if (p.startup.closed) {
          const a = apart.startup || (apart.startup = {
            wall: 0,
            blocked: 0,
            syncs: 0,
            n: 0,
            step: 0
          });
          a.wall += p.startup.wall_ns;
          a.blocked += p.startup.blocked_ns;
          a.syncs += p.startup.syncs;
          a.n++;
        }
    for (const k of ["startup", "open"])
      if (apart[k] && apart[k].n > 1) {
        const a = apart[k];
        a.wall /= a.n;
        a.blocked /= a.n;
        a.syncs /= a.n;
      }
    return {
      steps,
      hasLines,
      apart
    };
  }

  // More steps than BARS_MAX: each bar the mean of `per` consecutive steps
  function binSteps(steps, ntop) {
    const binned = steps.length > BARS_MAX;
    const per = binned ? Math.ceil(steps.length / BARS_MAX) : 1;
    const bars = [];
    for (let i = 0; i < steps.length; i += per) {
      const g = steps.slice(i, i + per);
      if (g.length === 1) {
        bars.push(g[0]);
        continue;
      }
      const b = {
        step: g[0].step,
        last: g[g.length - 1].step,
        wall: 0,
        blocked: 0,
        syncs: 0,
        lines: new Float64Array(ntop)
      };
      for (const s of g) {
        b.wall += s.wall;
        b.blocked += s.blocked;
        b.syncs += s.syncs;
        for (let t = 0; t < b.lines.length; t++) b.lines[t] += s.lines[t];
      }
      b.wall /= g.length;
      b.blocked /= g.length;
      b.syncs /= g.length;
      for (let t = 0; t < b.lines.length; t++) b.lines[t] /= g.length;
      bars.push(b);
    }
    return {
      bars,
      per,
      binned
    };
  }

  // the segments of each bar: the top lines', "other", under the wall time's grey
  function barSegments(run, hasLines) {
    const names = [],
      colors = [];
    if (hasLines) run.top.forEach((li, t) => {
      names.push(lineShort(run.lines[li]) + "  " + run.lines[li].api);
      colors.push(COLORS[t % COLORS.length]);
    });
    names.push(hasLines ? "other lines" : "blocked (all lines)");
    colors.push(OTHER);
    return {
      names,
      colors
    };
  }

  const f1 = (v) => Math.round(v * 10) / 10;

  // One bar's markup: its wall time, its segments stacked, and where it is above the scale the
  // break: a white slanted band across the bar near its top, the true value above
  function barSvg(b, i, g, seg) {
    const {
      T,
      plotH,
      bw,
      L,
      max,
      y
    } = g;
    const x = f1(L + i * bw),
      w = f1(Math.max(bw - (bw > 4 ? 1.5 : 0), 0.6));
    const cut = Math.max(b.wall, b.blocked) > max;
    const out = [`<g class="bar${cut ? " clipped" : ""}" data-i="${i}" data-step="${b.step}" data-wall-ns="${Math.round(b.wall)}" data-blocked-ns="${Math.round(b.blocked)}">`];
    out.push(`<rect x="${x}" y="${f1(T)}" width="${w}" height="${f1(plotH)}" fill="transparent"/>`);
    out.push(`<rect class="wall" x="${x}" y="${f1(y(b.wall))}" width="${w}" height="${f1(Math.max(plotH - (y(b.wall) - T), 0))}" fill="${IDLE}"/>`);
    const segs = seg.values;
    let named = 0;
    for (let t = 0; t < segs.length - 1; t++) named += segs[t] = b.lines[t];
    segs[segs.length - 1] = Math.max(b.blocked - named, 0);
    let acc = 0;
    for (let t = 0; t < segs.length; t++) {
      if (segs[t] <= 0) continue;
      const y1 = y(acc + segs[t]),
        hgt = Math.max(y(acc) - y1, 0.5);
      out.push(`<rect class="seg" data-s="${t}" x="${x}" y="${f1(y1)}" width="${w}" height="${f1(hgt)}" fill="${seg.colors[t]}"/>`);
      acc += segs[t];
    }
    if (cut) {
      const bx = Number(x),
        by = T + 9,
        cx = f1(bx + w / 2);
      const x0 = f1(bx - 1),
        x1 = f1(bx + w + 1);
      out.push(`<path class="break" d="M${x0} ${f1(by + 3)} L${x1} ${f1(by - 1)} L${x1} ${f1(by + 3)} L${x0} ${f1(by + 7)} Z" fill="#fff"/>`);
      for (const e of [0, 4]) out.push(`<line x1="${x0}" y1="${f1(by + 3 + e)}" x2="${x1}" y2="${f1(by - 1 + e)}" stroke="#667085" stroke-width="1"/>`);
      out.push(`<text class="clip-label" x="${cx}" y="${T - 6}" text-anchor="middle">${fmtNs(Math.max(b.wall, b.blocked))}</text>`);
    }
    out.push("</g>");
    return out.join("");
  }

  // The chart's markup: the scale's lines, the bars, the steps' ticks. A bar above the scale stops
  // at its top (clipped), marked broken, its value above it.
  function chartSvg(bars, scale, seg) {
    const {
      max,
      clipped
    } = scale;
    const W = Math.max(cardWidth() - 2 * 162, 300),
      H = 230,
      L = 56,
      B = 22,
      T = clipped ? 20 : 8;
    const plotW = W - L - 6,
      plotH = H - B - T,
      bw = plotW / bars.length;
    const y = (v) => T + plotH - (Math.min(v, max) / max) * plotH;
    const out = [`<svg xmlns="${SVGNS}" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" data-plot-h="${f1(plotH)}" data-scale-ns="${Math.round(max)}">`];
    for (let k = 0; k <= 4; k++) {
      const v = (max * k) / 4,
        yy = f1(y(v));
      out.push(`<line x1="${L}" x2="${W - 6}" y1="${yy}" y2="${yy}" stroke="#eef0f3"/><text x="${L - 6}" y="${yy + 4}" text-anchor="end">${fmtNs(v)}</text>`);
    }
    const g = {
      T,
      plotH,
      bw,
      L,
      max,
      y
    };
    const segs = {
      colors: seg.colors,
      values: new Float64Array(seg.names.length)
    };
    bars.forEach((b, i) => out.push(barSvg(b, i, g, segs)));
    const ticks = Math.min(bars.length, 10);
    for (let k = 0; k < ticks; k++) {
      const i = Math.floor((k * (bars.length - 1)) / Math.max(ticks - 1, 1));
      out.push(`<text x="${f1(L + i * bw + bw / 2)}" y="${H - 6}" text-anchor="middle">${bars[i].step}</text>`);
    }
    out.push("</svg>");
    return out.join("");
  }

  // one listener for every bar: the target says which bar and which segment
  function chartTip(bars, segName, max) {
    return (ev) => {
      const g = ev.target.closest("g.bar");
      if (!g) {
        hideTip();
        return;
      }
      const b = bars[Number(g.dataset.i)],
        when = `step ${b.step}${b.last ? "-" + b.last + " (mean)" : ""}`;
      const t = ev.target.dataset.s;
      if (t === undefined) {
        showTip(ev, `<b>${when}</b><br>wall ${fmtNs(b.wall)}, blocked ${fmtNs(b.blocked)} (${pct(b.blocked / (b.wall || 1))}), ${fmtRate(b.syncs)} syncs` +
          (Math.max(b.wall, b.blocked) > max ? `<br>above the scale (${fmtNs(max)}): the bar is cut` : ""));
        return;
      }
      const k = Number(t),
        ns = k < segName.length - 1 ? b.lines[k] : Math.max(b.blocked - b.lines.reduce((a, v) => a + v, 0), 0);
      showTip(ev, `<b>${esc(segName[k])}</b><br>${fmtNs(ns)} blocked in ${when} (${pct(ns / (b.wall || 1))} of its wall time)`);
    };
  }

  function chartLegend(run, hasLines, binning, clipped) {
    const legend = el("div", {
      class: "legend"
    });
    legend.append(el("span", {}, el("i", {
      style: `background:${IDLE}`
    }), "not blocked"));
    if (hasLines) run.top.forEach((li, t) => legend.append(el("span", {}, el("i", {
      style: `background:${COLORS[t % COLORS.length]}`
    }), el("code", {
      text: `#${li + 1} ${lineShort(run.lines[li])}`
    }))));
    legend.append(el("span", {}, el("i", {
      style: `background:${OTHER}`
    }), hasLines ? "other lines" : "blocked"));
    if (binning.binned) legend.append(el("span", {
      text: `(each bar: the mean of ${binning.per} steps)`
    }));
    if (clipped) legend.append(el("span", {
      class: "clip-note",
      text: `${clipped} step${clipped === 1 ? "" : "s"} above the scale, cut with a break, ${clipped === 1 ? "its" : "each one's"} time above ${clipped === 1 ? "it" : "its bar"}`
    }));
    return legend;
  }

  function chartCard(run, state) {
    const c = card("Steps", "wall time of each training step, its blocked time stacked by line");
    const body = el("div");
    c.append(body);

    function draw() {
      body.textContent = "";
      const {
        steps,
        hasLines,
        apart
      } = stepSeries(run, state.proc);
      const wrap = el("div", {
        class: "chart-wrap"
      });
      wrap.append(apartBox("before the first step", "start-up, not in the rates", apart.startup));
      const chart = el("div", {
        class: "chart",
        id: state.id + "-chart"
      });
      wrap.append(chart);
      wrap.append(apartBox("after the last step", "still open at exit, not in the rates", apart.open));
      body.append(wrap);
      if (!steps.length) {
        chart.append(el("div", {
          class: "empty",
          text: "no training step was recorded"
        }));
        return;
      }
      const binning = binSteps(steps, run.top.length),
        bars = binning.bars;
      const scale = barScale(bars);
      const seg = barSegments(run, hasLines);
      chart.innerHTML = chartSvg(bars, scale, seg);
      const svg = chart.firstChild;
      svg.addEventListener("mousemove", chartTip(bars, seg.names, scale.max));
      svg.addEventListener("mouseleave", hideTip);
      chart.append(chartLegend(run, hasLines, binning, scale.clipped));
    }
    draw.part = "chart";
    state.redraw.push(draw);
    return c;
  }

  // The chart's scale: the tallest bar, unless a few bars stand far above the rest (a step that
  // restarts DataLoader workers takes 50 times the others): then the tallest of the others with
  // a margin, rounded up to round ticks, and those few are cut. Far above: over CLIP_MEDIANS
  // times the median bar.
  const CLIP_MEDIANS = 4,
    CLIP_SHARE = 0.1;

  function barScale(bars) {
    const v = bars.map((b) => Math.max(b.wall, b.blocked)).sort((a, b) => a - b);
    const top = v.length ? v[v.length - 1] : 0,
      med = v.length ? v[(v.length - 1) >> 1] : 0;
    const normal = v.filter((x) => x <= CLIP_MEDIANS * med);
    const over = v.length - normal.length;
    // cut only a few bars (else the run has two kinds of step, both worth seeing at scale)
    if (!over || !normal.length || over > Math.max(1, CLIP_SHARE * v.length)) return {
      max: top || 1,
      clipped: 0
    };
    const max = niceTop(normal[normal.length - 1] * 1.1) || 1;
    return {
      max,
      clipped: v.filter((x) => x > max).length
    };
  }
  // a scale whose four ticks read as round figures: 4 x (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8) x 10^k
  function niceTop(v) {
    const q = v / 4,
      k = Math.pow(10, Math.floor(Math.log10(q)));
    for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10])
      if (m * k >= q) return 4 * m * k;
    return v;
  }

  function apartBox(title, note, a) {
    const d = el("div", {
      class: "apart"
    }, el("b", {
      text: title
    }));
    if (!a) {
      d.append(el("div", {
        text: "none"
      }));
      return d;
    }
    d.append(el("div", {
      text: note
    }));
    d.append(el("div", {
      text: `wall ${fmtNs(a.wall)}`
    }));
    d.append(el("div", {
      text: `blocked ${fmtNs(a.blocked)}`
    }));
    d.append(el("div", {
      text: `${a.n > 1 ? fmtRate(a.syncs) : a.syncs} sync${a.syncs === 1 ? "" : "s"}${a.n > 1 ? " (mean of " + a.n + ")" : ""}`
    }));
    return d;
  }

  // ---- the report's per-rank section (cli/ranks.c), as the CLI computed it --------------------
  // a rank's name, a link that shows that process alone
  function rankLink(run, i, onPick, extra) {
    return el("a", {
      href: "#",
      class: "rank",
      "data-proc": i,
      text: run.procs[i].name + (extra || ""),
      onclick: (e) => {
        e.preventDefault();
        onPick(i);
      }
    });
  }
  // names of processes, the first `shown` and a "+N more" that shows the rest
  function rankList(run, procs, onPick, shown, extra) {
    const span = el("span", {
      class: "ranklist"
    });
    const put = (from, to) => {
      for (let k = from; k < to; k++) {
        if (k) span.append(", ");
        span.append(rankLink(run, procs[k], onPick, extra ? extra(procs[k]) : ""));
      }
    };
    put(0, Math.min(shown, procs.length));
    if (procs.length > shown) {
      const more = el("a", {
        href: "#",
        class: "more-ranks",
        text: `, +${procs.length - shown} more`,
        onclick: (e) => {
          e.preventDefault();
          more.remove();
          put(shown, procs.length);
        }
      });
      span.append(more);
    }
    return span;
  }

  const NAMED = 8,
    PARTIAL_SHOWN = 10;

  function ranksCard(run, state, onPick) {
    const R = run.ranks,
      n = run.procs.length;
    const c = card("Ranks", "the report's per-rank section; click a rank to show it alone");
    c.id = state.id + "-ranks";
    c.append(el("div", {
      class: "rank-header",
      text: R.header
    }));
    const t = el("table", {
      class: "rankfig"
    }, el("tr", {}, el("th", {
      class: "l"
    }), el("th", {
      text: "min"
    }), el("th", {
      text: "median"
    }), el("th", {
      text: "max"
    })));
    for (const [key, title] of [
        ["syncs", "syncs/step"],
        ["share", "blocked share"]
      ]) {
      const f = R[key];
      t.append(el("tr", {
          "data-fig": key
        }, el("th", {
          class: "l",
          text: title
        }),
        el("td", {
          class: "min"
        }, f.min_text + " (", rankLink(run, f.min, onPick), ")"),
        el("td", {
          class: "median",
          text: f.median_text
        }),
        el("td", {
          class: "max"
        }, f.max_text + " (", rankLink(run, f.max, onPick), ")")));
    }
    const row = (cls, label, ...kids) => el("div", {
      class: "rank-row " + cls
    }, el("b", {
      text: label
    }), ...kids);
    if (R.no_step.length) c.append(row("no-step", `no step mark (the whole run is one step): ${R.no_step.length}: `, rankList(run, R.no_step, onPick, NAMED)));
    c.append(t);
    c.append(row("waits-most", "waits most: ", rankList(run, R.waits_most, onPick, NAMED, (i) => " " + run.procs[i].rank_share_text)));
    c.append(R.stragglers.length ? row("stragglers", "stragglers: ", rankList(run, R.stragglers, onPick, NAMED), " " + R.rule)
      : row("stragglers", "stragglers: ", "none " + R.rule));
    const pl = el("div", {
      class: "rank-row partial"
    }, el("b", {
      text: R.partial.length ? `lines on some ranks only (${R.partial.length}):` : "lines on some ranks only: "
    }));
    if (!R.partial.length) pl.append("none (every line syncs on every rank)");
    const list = el("div", {
      class: "partial-lines"
    });
    const putLines = (from, to) => R.partial.slice(from, to).forEach((g) => {
      const l = run.lines[g.line];
      list.append(el("div", {
          class: "partial-line",
          "data-line": g.line
        },
        el("code", {
          text: l.api + " " + l.where
        }),
        el("div", {
          class: "on"
        }, g.on ? `on ${g.k} of ${n}: ` : `not on ${n - g.k} of ${n}: `, rankList(run, g.procs, onPick, NAMED))));
    });
    putLines(0, PARTIAL_SHOWN);
    if (R.partial.length > PARTIAL_SHOWN) {
      const b = el("button", {
        text: `show ${R.partial.length - PARTIAL_SHOWN} more lines`,
        onclick: () => {
          b.remove();
          putLines(PARTIAL_SHOWN, R.partial.length);
        }
      });
      list.append(b);
    }
    pl.append(list);
    c.append(pl);
    const mark = () => c.querySelectorAll("a.rank").forEach((a) => a.classList.toggle("sel", Number(a.dataset.proc) === state.proc));
    mark.part = "ranks";
    state.redraw.push(mark);
    return c;
  }

  // ---- which processes wait more ---------------------------------------------------------------
  const PROCS_SHOWN = 32;

  function spreadCard(run, state, onPick) {
    const ranked = !!run.ranks;
    const c = card("Processes", "blocked time and syncs per training step of each process; click one to show it alone" + (ranked ? ", a column to sort" : ""));
    const t = el("table", {
      class: "spread",
      id: state.id + "-procs"
    });
    const cols = [
      ["proc", "process", (p, i) => i],
      ["steps", "steps", (p) => p.training_steps],
      ["step", "step (mean)", (p) => p.wall_ns / (p.training_steps || 1)],
      ["blocked", "blocked/step", (p) => p.blocked_ns / (p.training_steps || 1)]
    ];
    if (ranked) cols.push(["share", "blocked share", (p) => p.rank_share]);
    cols.push(["syncs", "syncs/step", (p) => p.syncs / (p.training_steps || 1)]);
    let sortBy = "proc",
      desc = false,
      shown = PROCS_SHOWN;
    const head = el("tr");
    cols.forEach(([k, title], j) => {
      head.append(el("th", {
        class: j ? "" : "l",
        "data-sort": k,
        text: title,
        onclick: () => {
          desc = sortBy === k ? !desc : k !== "proc";
          sortBy = k;
          render();
        }
      }));
      if (k === "blocked") head.append(el("th", {
        text: ""
      }));
    });
    const tbody = el("tbody"),
      more = el("div", {
        class: "more"
      });
    t.append(el("thead", {}, head), tbody);
    let max = 0;
    for (const p of run.procs) max = Math.max(max, p.blocked_ns / (p.training_steps || 1));

    function render() {
      const get = cols.find((x) => x[0] === sortBy)[2];
      const order = run.procs.map((p, i) => i);
      order.sort((a, b) => (desc ? -1 : 1) * (get(run.procs[a], a) - get(run.procs[b], b)) || a - b);
      tbody.textContent = "";
      for (const i of order.slice(0, shown)) {
        const p = run.procs[i],
          b = p.blocked_ns / (p.training_steps || 1);
        const name = el("td", {
          class: "l",
          text: p.label
        });
        if (p.straggler) name.append(el("span", {
          class: "kind straggler",
          text: "straggler"
        }));
        if (p.no_step) name.append(el("span", {
          class: "kind",
          text: "no step mark"
        }));
        const tr = el("tr", {
            "data-proc": i,
            class: state.proc === i ? "sel" : "",
            onclick: () => onPick(state.proc === i ? -1 : i)
          },
          name, el("td", {
            text: String(p.training_steps)
          }),
          el("td", {
            text: fmtNs(p.wall_ns / (p.training_steps || 1))
          }), el("td", {
            text: fmtNs(b)
          }),
          el("td", {
            class: "l"
          }, el("span", {
            class: "bar",
            style: `width:${Math.round((160 * b) / (max || 1))}px`
          })));
        if (ranked) tr.append(el("td", {
          text: p.rank_share_text
        }));
        tr.append(el("td", {
          text: ranked ? p.rank_syncs_text : fmtRate(p.syncs / (p.training_steps || 1))
        }));
        tbody.append(tr);
      }
      more.textContent = "";
      if (order.length > shown) more.append(el("button", {
        text: `show ${Math.min(PROCS_SHOWN * 4, order.length - shown)} more of ${order.length - shown}`,
        onclick: () => {
          shown += PROCS_SHOWN * 4;
          render();
        }
      }));
      // the selected process stays in sight
      if (state.proc >= 0 && order.indexOf(state.proc) >= shown) tbody.prepend(el("tr", {
        class: "sel",
        "data-proc": state.proc
      }, el("td", {
        class: "l",
        text: run.procs[state.proc].label + " (selected)"
      })));
    }
    render.part = "procs";
    state.redraw.push(render);
    c.append(t, more);
    return c;
  }

  // ---- the sites table -------------------------------------------------------------------------
  const COLUMNS = [{
      key: "blocked",
      title: "blocked/step",
      get: (l) => l.blocked_per_step_ns
    },
    {
      key: "share",
      title: "share",
      get: (l) => l.share
    },
    {
      key: "syncs",
      title: "syncs/step",
      get: (l) => l.syncs_per_step
    },
    {
      key: "mean",
      title: "mean",
      get: (l) => (l.count ? l.blocked_ns / l.count : 0)
    },
    {
      key: "max",
      title: "max",
      get: (l) => l.max_ns
    },
    {
      key: "api",
      title: "api",
      get: (l) => l.apis_text || l.api,
      text: true
    },
    {
      key: "op",
      title: "op",
      get: (l) => l.op || "",
      text: true
    },
    {
      key: "where",
      title: "where",
      get: (l) => l.where,
      text: true
    },
    {
      key: "hint",
      title: "hint",
      get: (l) => l.hint || "",
      text: true
    },
  ];

  function threadName(run, tid) {
    for (const p of run.procs) {
      for (const t of p.threads)
        if (t[0] === tid) return t[1] || "tid " + tid;
      if (p.timeline)
        for (const t of p.timeline.threads)
          if (t[0] === tid) return t[1] || "tid " + tid;
    }
    return "tid " + tid;
  }

  const apisOf = (l) => (l.apis && l.apis.length ? l.apis.map((a) => a.api) : [l.api]);

  // The table's filters (text, API, kind, thread, start-up) and matches(l): whether a line
  // passes them and is the chosen process's
  function siteFilters(run, lines, state) {
    const controls = el("div", {
      class: "controls"
    });
    const q = el("input", {
      type: "search",
      placeholder: "filter: function, file, api, op...",
      size: 30,
      id: state.id + "-filter"
    });
    const apis = [...new Set(lines.flatMap(apisOf))].sort();
    const apiSel = el("select", {
      id: state.id + "-api"
    }, el("option", {
      value: "",
      text: "every API"
    }), ...apis.map((a) => el("option", {
      value: a,
      text: a
    })));
    const kindSel = el("select", {
        id: state.id + "-kind"
      }, el("option", {
        value: "",
        text: "every kind"
      }),
      el("option", {
        value: "line",
        text: "line (forward)"
      }), el("option", {
        value: "backward",
        text: "backward"
      }),
      el("option", {
        value: "node",
        text: "backward (node only)"
      }));
    const tids = [...new Set(lines.flatMap((l) => l.threads))];
    const thrSel = el("select", {
        id: state.id + "-thread"
      }, el("option", {
        value: "",
        text: tids.length ? "every thread" : "threads: needs trace.bin"
      }),
      ...tids.map((t) => el("option", {
        value: t,
        text: threadName(run, t)
      })));
    if (!tids.length) thrSel.disabled = true;
    const startupBox = el("input", {
      type: "checkbox",
      id: state.id + "-startup"
    });
    controls.append(q, apiSel, kindSel, thrSel, el("label", {}, startupBox, " lines of start-up only"));

    function matches(l) {
      const s = q.value.trim().toLowerCase();
      const ops = (l.ops || []).map((o) => o.op + " " + (o.hint || "")).join(" ");
      if (s && !(l.where + " " + apisOf(l).join(" ") + " " + (l.op || "") + " " + (l.node || "") + " " + (l.hint || "") + " " + ops).toLowerCase().includes(s)) return false;
      if (apiSel.value && !apisOf(l).includes(apiSel.value)) return false;
      if (kindSel.value && l.kind !== kindSel.value) return false;
      if (thrSel.value && !l.threads.includes(Number(thrSel.value))) return false;
      if (state.proc >= 0 && !l.per_proc.some((pp) => pp[0] === state.proc)) return false;
      if (!startupBox.checked && !l.count) return false;
      return true;
    }
    return {
      controls,
      inputs: [q, apiSel, kindSel, thrSel, startupBox],
      matches
    };
  }

  // The header row: a click on a column sorts by it (again: the other way)
  function sitesHead(state, onSort) {
    const head = el("tr", {}, el("th", {
      text: "#"
    }));
    for (const col of COLUMNS) {
      const th = el("th", {
        class: col.text ? "l" : "",
        "data-sort": col.key,
        text: col.title
      });
      th.addEventListener("click", () => {
        state.sortDesc = state.sort === col.key ? !state.sortDesc : !col.text;
        state.sort = col.key;
        onSort();
      });
      head.append(th);
    }
    return el("thead", {}, head);
  }

  // A line's row; a click opens or closes its detail
  function siteRow(l, isOpen, onToggle) {
    const tr = el("tr", {
      class: "row" + (isOpen ? " open" : ""),
      "data-line": l.index,
      "data-api": l.api,
      "data-kind": l.kind,
      "data-file": l.file || "",
      "data-lineno": l.line,
      "data-count": l.count,
      "data-blocked-ns": l.blocked_ns,
      "data-syncs-per-step": l.syncs_per_step,
      "data-blocked-per-step-ns": l.blocked_per_step_ns
    });
    tr.append(el("td", {
        text: String(l.index + 1)
      }), el("td", {
        text: l.blocked_per_step_text
      }),
      el("td", {}, el("span", {
        class: "sharebar",
        style: `width:${Math.max(1, Math.round(60 * Math.min(l.share, 1)))}px`
      }), el("span", {
        class: "share",
        text: pct(l.share)
      })),
      el("td", {
        text: l.syncs_per_step_text
      }), el("td", {
        text: l.mean_text
      }), el("td", {
        text: l.max_text
      }),
      el("td", {
        class: "l",
        text: l.apis_text || l.api
      }), el("td", {
        class: "op l",
        text: l.op || ""
      }));
    const where = el("td", {
      class: "where l"
    });
    where.title = l.where;
    where.append(el("span", {
      class: "fn",
      text: l.file ? l.where.replace(l.file, shortPath(l.file)) : l.where
    }), el("span", {
      class: "kind " + l.kind,
      text: l.kind === "line" ? "line" : l.kind === "backward" ? "backward" : "node"
    }));
    if (!l.count) where.append(el("span", {
      class: "kind",
      text: "start-up only"
    }));
    tr.append(where, el("td", {
      class: "hintcol l",
      title: l.hint || ""
    }, el("div", {
      text: l.hint || ""
    })));
    tr.addEventListener("click", onToggle);
    return tr;
  }

  function sitesCard(run, state) {
    const c = card("Sync sites", "the report's lines; click a row for its stack, source and hint; click a column to sort");
    const lines = run.lines.map((l, i) => Object.assign({
      index: i
    }, l));
    const filters = siteFilters(run, lines, state);
    c.append(filters.controls);
    const table = el("table", {
      class: "sites",
      id: state.id + "-sites"
    });
    const thead = sitesHead(state, () => render()),
      tbody = el("tbody");
    table.append(thead, tbody);
    c.append(table);
    const more = el("div", {
      class: "more"
    });
    c.append(more);
    let shown = ROWS_SHOWN;
    const open = new Set();

    function render() {
      const col = COLUMNS.find((x) => x.key === state.sort) || COLUMNS[0];
      for (const th of thead.querySelectorAll("th[data-sort]")) {
        th.classList.toggle("sorted-desc", th.dataset.sort === col.key && state.sortDesc);
        th.classList.toggle("sorted-asc", th.dataset.sort === col.key && !state.sortDesc);
      }
      const rows = lines.filter(filters.matches);
      rows.sort((a, b) => {
        const x = col.get(a),
          y = col.get(b);
        const r = col.text ? String(x).localeCompare(String(y)) : x - y;
        return (state.sortDesc ? -r : r) || a.index - b.index;
      });
      tbody.textContent = "";
      const frag = document.createDocumentFragment();
      rows.slice(0, shown).forEach((l) => {
        frag.append(siteRow(l, open.has(l.index), () => {
          if (open.has(l.index)) open.delete(l.index);
          else open.add(l.index);
          render();
        }));
        if (l.ops && l.ops.length > 1) opRows(l).forEach((r) => frag.append(r));
        if (l.estimate) estimateRows(l).forEach((r) => frag.append(r));
        if (open.has(l.index)) frag.append(el("tr", {
          class: "detail",
          "data-detail": l.index
        }, el("td", {
          colspan: COLUMNS.length + 1
        }, detail(run, l))));
      });
      tbody.append(frag);
      more.textContent = "";
      if (!rows.length) more.append(el("div", {
        class: "empty",
        text: "no line matches"
      }));
      if (rows.length > shown) more.append(el("button", {
        text: `show ${Math.min(ROWS_SHOWN, rows.length - shown)} more of ${rows.length - shown}`,
        onclick: () => {
          shown += ROWS_SHOWN;
          render();
        }
      }));
      else if (rows.length > ROWS_SHOWN) more.append(el("span", {
        class: "note",
        text: `${rows.length} lines`
      }));
    }
    for (const x of filters.inputs) x.addEventListener(x.type === "search" ? "input" : "change", () => {
      shown = ROWS_SHOWN;
      render();
    });
    render.part = "sites";
    state.redraw.push(render);
    return c;
  }

  // issue 35 item 1: a row where several operators synced lists each one under it, heaviest
  // first, with its own syncs/step, blocked time and hint
  function opRows(l) {
    const rows = l.ops.map((o) => el("tr", {
        class: "oprow",
        "data-line": l.index,
        "data-op": o.op,
        "data-syncs-per-step": o.syncs_per_step,
        "data-blocked-per-step-ns": o.blocked_per_step_ns
      },
      el("td"), el("td", {
        text: o.blocked_per_step_text
      }), el("td"), el("td", {
        text: o.syncs_per_step_text
      }),
      el("td"), el("td"), el("td"), el("td", {
        class: "op l",
        text: o.op
      }),
      el("td", {
        class: "where l"
      }, el("span", {
        class: "kind op",
        text: "op"
      })),
      el("td", {
        class: "hintcol l",
        title: o.hint || ""
      }, el("div", {
        text: o.hint || ""
      }))));
    if (l.ops_more) rows.push(el("tr", {
        class: "oprow",
        "data-line": l.index
      }, el("td"),
      el("td", {
        class: "l",
        colspan: COLUMNS.length,
        text: `... and ${l.ops_more} more sites of other ops`
      })));
    return rows;
  }

  // issue 24: the part of a backward line's figure estimated (its node's syncs in steps without
  // attribution, split between the forward lines seen making it), in the report's words, and one
  // sub-row per line of the split with its share
  function estimateRows(l) {
    const e = l.estimate,
      span = COLUMNS.length - 1;
    const note = el("tr", {
        class: "est est-note",
        "data-line": l.index
      },
      el("td"), el("td", {
        class: "l",
        colspan: span + 1
      }, el("span", {
        class: "kind estimate",
        text: "estimate"
      }), " " + e.text));
    const rows = [note];
    for (const sh of e.shares) {
      rows.push(el("tr", {
          class: "est est-share" + (sh.here ? " here" : ""),
          "data-line": l.index,
          "data-share-line": sh.line,
          "data-here": sh.here ? "1" : "0",
          "data-where": sh.where,
          "data-count": sh.count,
          "data-blocked-ns": sh.blocked_ns,
          "data-syncs-per-step": sh.syncs_per_step
        },
        el("td"), el("td", {
          text: "~" + sh.blocked_per_step_text
        }), el("td"), el("td", {
          text: "~" + sh.syncs_per_step_text
        }),
        el("td"), el("td"), el("td", {
          class: "l",
          text: l.api
        }), el("td", {
          class: "op l",
          text: l.op || ""
        }),
        el("td", {
            class: "where l"
          }, el("span", {
            class: "fn",
            text: `~${sh.syncs_per_step_text}/step ${sh.here ? "here" : "from " + sh.where}`
          }),
          el("span", {
            class: "kind estimate",
            text: "estimate"
          })), el("td")));
    }
    return rows;
  }

  function detail(run, l) {
    const d = el("div", {
      class: "detail"
    });
    if (l.ops && l.ops.length > 1) {
      d.append(el("h3", {
        text: `hints (${l.ops.length} ops, heaviest first)`
      }));
      for (const o of l.ops) d.append(el("div", {
          class: "hint"
        }, el("b", {
          text: `${o.op}  ${o.syncs_per_step_text} syncs/step, ${o.blocked_per_step_text}/step`
        }),
        o.hint ? el("div", {
          text: o.hint
        }) : null, o.matched ? el("div", {
          class: "matched",
          text: "matched: " + o.matched
        }) : null));
    } else if (l.hint) d.append(el("h3", {
      text: "hint"
    }), el("div", {
      class: "hint"
    }, l.hint, l.matched ? el("div", {
      class: "matched",
      text: "matched: " + l.matched
    }) : null));
    if (l.kind !== "line") {
      d.append(el("h3", {
        text: "backward pass"
      }));
      const b = el("div");
      b.append(l.kind === "backward" ? `node ${l.node}, in autograd's thread; its forward line: ${l.function || "??"}  ${l.file || ""}:${l.line}`
        : `node ${l.node}, in autograd's thread (its forward line was not recorded: SYNCSPY_BACKWARD)`);
      if (l.backward_called_at) b.append(el("div", {
        text: "backward() called at " + l.backward_called_at
      }));
      d.append(b);
    }
    if (l.source) {
      d.append(el("h3", {
        text: "source (" + shortPath(l.file) + ")"
      }));
      const s = el("div", {
        class: "source"
      });
      l.source.text.forEach((t, i) => {
        const n = l.source.first + i;
        s.append(el("div", {
          class: n === l.source.line ? "hit" : ""
        }, el("span", {
          class: "ln",
          text: String(n)
        }), t));
      });
      d.append(s);
    } else if (l.file) {
      d.append(el("h3", {
        text: "source"
      }), el("div", {
        class: "empty",
        text: l.file + " was not there when the page was written"
      }));
    }
    d.append(el("h3", {
      text: "stack (its heaviest site, innermost first)"
    }), stackView(run, l));
    if (run.procs.length > 1) {
      d.append(el("h3", {
        text: "per process"
      }));
      const t = el("table", {
        class: "spread"
      });
      for (const pp of l.per_proc) {
        const p = run.procs[pp[0]];
        t.append(el("tr", {}, el("td", {
            class: "l",
            text: p.label
          }), el("td", {
            text: fmtRate(pp[1] / (p.training_steps || 1)) + " syncs/step"
          }),
          el("td", {
            text: fmtNs(pp[2] / (p.training_steps || 1)) + "/step"
          })));
      }
      d.append(t);
    }
    return d;
  }

  function stackView(run, l) {
    const site = run.sites[l.site];
    const box = el("div", {
      class: "stack"
    });
    if (!site || !site[SITE_FRAMES].length) {
      box.append(el("div", {
        text: "(no stack)"
      }));
      return box;
    }
    const fr = site[SITE_FRAMES].map(frame);
    let own = fr.findIndex((f) => f.backward || f.caller || f.unseen);
    if (own < 0) own = fr.length;
    const user = l.user >= 0 && l.user < own ? l.user : -1;
    const runtime = user > 0 ? user : 0;
    if (runtime) {
      const hidden = el("div", {
        style: "display:none"
      });
      fr.slice(0, runtime).forEach((f) => hidden.append(frameRow(f, "runtime")));
      const t = el("div", {
        class: "runtime"
      }, el("a", {
        href: "#",
        text: `via ${S[site[SITE_API]]} in ${fr[0].py ? "python" : fr[0].module || "??"} (${runtime} runtime frame${runtime === 1 ? "" : "s"}) +`,
        onclick: (e) => {
          e.preventDefault();
          hidden.style.display = hidden.style.display ? "" : "none";
        }
      }));
      box.append(t, hidden);
    }
    // the runtime's frames above the user's (the interpreter, the framework) are folded into
    // one line each run, as the report leaves them out
    let folded = [];
    const flush = () => {
      if (!folded.length) return;
      const hidden = el("div", {
        style: "display:none"
      });
      folded.forEach((f) => hidden.append(frameRow(f, "runtime")));
      const n = folded.length;
      box.append(el("div", {
        class: "runtime"
      }, el("a", {
        href: "#",
        text: `... ${n} runtime frame${n === 1 ? "" : "s"} +`,
        onclick: (e) => {
          e.preventDefault();
          hidden.style.display = hidden.style.display ? "" : "none";
        }
      })), hidden);
      folded = [];
    };
    for (let i = runtime; i < fr.length; i++) {
      const f = fr[i];
      const isUser = i === user || (l.kind === "backward" && i === l.user);
      if (f.runtime && !isUser && !f.backward && !f.caller && !f.unseen && i > runtime) {
        folded.push(f);
        continue;
      }
      flush();
      if (f.backward) {
        box.append(el("div", {
          class: "sect",
          text: `backward of ${f.fn}: the forward stack that created the node`
        }));
        continue;
      }
      if (f.caller) {
        box.append(el("div", {
          class: "sect",
          text: "the thread that called backward()"
        }));
        continue;
      }
      if (f.unseen) {
        box.append(el("div", {
          class: "sect",
          text: `no forward line: ${f.fn}`
        }));
        continue;
      }
      box.append(frameRow(f, isUser ? "user" : f.runtime ? "runtime" : ""));
    }
    flush();
    return box;
  }

  function frameRow(f, cls) {
    const r = el("div", {
      class: cls
    }, f.fn || "??");
    if (f.file) r.append(el("span", {
      class: "loc",
      text: shortPath(f.file) + (f.line ? ":" + f.line : "")
    }));
    r.append(el("span", {
      class: "tag",
      text: f.py ? "[py]" : f.module ? "(" + f.module + ")" : ""
    }));
    r.title = (f.fn || "??") + (f.file ? "  " + f.file + ":" + f.line : "") + (f.module ? "  (" + f.module + ")" : "");
    return r;
  }

  // ---- flame graph (icicle) of blocked time in the training steps ------------------------------
  // The runtime's frames above the program's outermost one (_start, __libc_start_main,
  // Py_RunMain, _PyEval_EvalFrameDefault, runpy's): the same in every stack, a tower of rows
  // before the program's own. Each stack starts at its outermost frame that is not the
  // runtime's (the flag html.c sets with hints_frame_is_runtime); one that has none keeps all.
  // acc.cut says how many were left out (the heaviest stack's names).
  function programTop(fr, own, ns, acc) {
    let top = own - 1;
    while (top >= 0 && flagsOf(fr[top]) & FLAG_RUNTIME) top--;
    if (top < 0) return own - 1;
    const n = own - 1 - top;
    if (n) {
      if (!acc.cut) acc.cut = {
        min: n,
        max: n,
        ns: 0,
        names: null
      };
      const cut = acc.cut;
      cut.min = Math.min(cut.min, n);
      cut.max = Math.max(cut.max, n);
      if (ns > cut.ns) {
        cut.ns = ns;
        cut.names = fr.slice(top + 1, own).reverse().map((f) => frame(f).fn || "??");
      }
    }
    return top;
  }

  function showCut(cutNote, cut) {
    cutNote.textContent = "";
    if (!cut) return;
    const n = cut.min === cut.max ? String(cut.max) : `${cut.min}-${cut.max}`;
    const names = cut.names.length > 6 ? [...cut.names.slice(0, 3), "...", ...cut.names.slice(-2)] : cut.names;
    cutNote.append(`${n} runtime frame${cut.max === 1 ? "" : "s"} above the first row, left out: `, el("code", {
      text: names.join(" \u203a ")
    }));
    cutNote.title = cut.names.join("\n");
  }
  // frames top..0 onto path, outermost first; a run of the runtime's frames between two of the
  // program's (the interpreter calling a Module, torch's _call_impl) is one row, as the stack of
  // an opened row folds it; those under the program's innermost frame (torch's C++) stay
  const FOLD = "\u22ef ";

  function programPath(fr, top, path) {
    let inner = top; // a stack with no frame of the program's keeps all
    for (let i = 0; i <= top; i++)
      if (!(flagsOf(fr[i]) & FLAG_RUNTIME)) {
        inner = i;
        break;
      }
    let runtimeRun = [];
    for (let i = top; i >= 0; i--) {
      if (i > inner && flagsOf(fr[i]) & FLAG_RUNTIME) {
        runtimeRun.push(frameLabel(frame(fr[i])));
        continue;
      }
      if (runtimeRun.length) {
        const name = `${FOLD}${runtimeRun.length} runtime frame${runtimeRun.length === 1 ? "" : "s"}`;
        (path.folded || (path.folded = new Map())).set(name, runtimeRun);
        path.push(name);
        runtimeRun = [];
      }
      path.push(frameLabel(frame(fr[i])));
    }
  }
  // The tree of the sites' stacks (of one process, or of all: one root per process up to
  // FLAME_PROCS), each node's blocked ns; the sync's own frames only (up to a backward marker)
  function flameTree(run, proc) {
    const root = {
        name: "all",
        ns: 0,
        kids: new Map()
      },
      acc = {
        cut: null
      };
    for (const s of run.sites) {
      if (proc >= 0 && s[SITE_PROC] !== proc) continue;
      const ns = s[SITE_BLOCKED_NS];
      if (!ns) continue;
      let node = root;
      node.ns += ns;
      const path = [];
      if (run.procs.length > 1 && run.procs.length <= FLAME_PROCS && proc < 0) path.push(run.procs[s[SITE_PROC]].label);
      const fr = s[SITE_FRAMES];
      let own = fr.length;
      for (let i = 0; i < fr.length; i++)
        if (flagsOf(fr[i]) & (FLAG_BACKWARD | FLAG_CALLER)) {
          own = i;
          break;
        }
      programPath(fr, programTop(fr, own, ns, acc), path);
      path.push(S[s[SITE_API]]);
      for (const name of path) {
        let k = node.kids.get(name);
        if (!k) node.kids.set(name, k = {
          name,
          ns: 0,
          kids: new Map(),
          parent: node,
          folded: path.folded && path.folded.get(name)
        });
        k.ns += ns;
        node = k;
      }
    }
    return {
      root,
      cut: acc.cut
    };
  }

  function flameColor(name) {
    let h = 0;
    for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) | 0;
    if (name.startsWith(FOLD)) return "#e4e7ec";
    const py = /\.py:\d+\)$/.test(name);
    return py ? `hsl(${200 + (Math.abs(h) % 40)},70%,${72 + (Math.abs(h >> 8) % 12)}%)` : `hsl(${18 + (Math.abs(h) % 30)},85%,${68 + (Math.abs(h >> 8) % 14)}%)`;
  }
  // The blocks of the tree under zoom, W pixels wide, a row of RH pixels per depth: their
  // markup, the nodes they show (by data-i) and the depth
  function flameBlocks(zoom, W, RH) {
    let depth = 0;
    const out = [],
      nodes = [];

    function place(n, x, d, w) {
      if (w < 1) return;
      depth = Math.max(depth, d + 1);
      const k = nodes.push(n) - 1;
      out.push(`<div class="n" data-i="${k}" data-d="${d}" style="left:${Math.round(x * 10) / 10}px;top:${d * RH}px;width:${Math.round(w * 10) / 10}px;background:${d ? flameColor(n.name) : "#d0d5dd"}">${w > 30 ? esc(n.name) : ""}</div>`);
      let cx = x;
      const kids = [...n.kids.values()].sort((a, b) => b.ns - a.ns);
      for (const kid of kids) {
        const kw = (w * kid.ns) / n.ns;
        place(kid, cx, d + 1, kw);
        cx += kw;
      }
    }
    place(zoom, 0, 0, W);
    return {
      html: out.join(""),
      nodes,
      depth
    };
  }
  // the path from the root to the zoomed node, each a link that zooms out to it
  function flameCrumbs(crumbs, zoom, onZoom) {
    const chain = [];
    for (let n = zoom; n; n = n.parent) chain.unshift(n);
    chain.forEach((n, i) => {
      if (i) crumbs.append(" / ");
      crumbs.append(i < chain.length - 1 ? el("a", {
        text: n.name,
        onclick: () => onZoom(n)
      }) : el("b", {
        text: n.name
      }));
    });
  }

  function flameCard(run, state) {
    const c = card("Flame graph", "blocked time in the training steps by stack, the program's outermost frame on top; click to zoom");
    const cutNote = el("div", {
      class: "flame-cut",
      id: state.id + "-flame-cut"
    });
    const crumbs = el("div", {
        class: "crumbs"
      }),
      box = el("div", {
        class: "flame",
        id: state.id + "-flame"
      });
    c.append(cutNote, crumbs, box);
    let root = null,
      zoom = null;
    const zoomTo = (n) => {
      zoom = n;
      render();
    };

    function draw() {
      const tree = flameTree(run, state.proc);
      root = tree.root;
      showCut(cutNote, tree.cut);
      if (!zoom || !root.ns) zoom = root;
      render();
    }

    function render() {
      box.textContent = "";
      crumbs.textContent = "";
      if (!root.ns) {
        box.append(el("div", {
          class: "empty",
          text: "no blocked time in the training steps"
        }));
        box.style.height = "auto";
        return;
      }
      flameCrumbs(crumbs, zoom, zoomTo);
      const RH = 18,
        blocks = flameBlocks(zoom, cardWidth() - 2, RH),
        nodes = blocks.nodes;
      box.style.height = blocks.depth * RH + 2 + "px";
      box.innerHTML = blocks.html;
      box.onclick = (ev) => {
        const t = ev.target.closest("div.n");
        if (t) zoomTo(nodes[Number(t.dataset.i)]);
      };
      box.onmousemove = (ev) => {
        const t = ev.target.closest("div.n");
        if (!t) {
          hideTip();
          return;
        }
        const n = nodes[Number(t.dataset.i)];
        showTip(ev, `<code>${esc(n.name)}</code><br>${fmtNs(n.ns / run.training_steps)}/step blocked (${pct(n.ns / root.ns)} of all blocked time)` +
          (n.folded ? `<br>folded, outermost first:<br><code>${n.folded.map(esc).join("<br>")}</code>` : ""));
      };
      box.onmouseleave = hideTip;
    }
    draw.part = "flame";
    state.redraw.push(draw);
    return c;
  }

  // ---- one step's timeline per thread -----------------------------------------------------------
  // A step's events (cli/html.c write_timeline): syncs as [tid, start, duration, line, api],
  // launches as [tid, time], flattened
  const SYNC_FIELDS = 5,
    LAUNCH_FIELDS = 2;

  // Why there is no timeline to draw (an element saying so), or null
  function timelineMissing(run, p, state) {
    if (p && p.traced && !p.timeline && run.ranks) {
      const have = run.procs.map((q, i) => i).filter((i) => run.procs[i].timeline);
      return el("div", {
          class: "empty"
        }, `${p.name}: its timeline is not in the page; it carries ${have.length} of ${run.procs.length} processes' timelines ` +
        "(the first, the least and the median blocked, the most blocked): ", rankList(run, have, state.pick, have.length));
    }
    if (!p || !p.timeline || !p.timeline.steps.length)
      return el("div", {
        class: "empty",
        text: "no timeline: the page was made from summary.json (a trace.bin holds each sync's time)"
      });
    return null;
  }

  // the slowest training step (start-up, step 0, is apart when the rates leave it out)
  function slowestStep(tl) {
    let slowest = tl.steps.findIndex((s) => !s.apart && !s.spanned);
    if (slowest < 0) slowest = 0;
    tl.steps.forEach((s, i) => {
      if (!s.apart && !s.spanned && s.dur > tl.steps[slowest].dur) slowest = i;
    });
    return slowest;
  }

  function stepSelect(state, tl, slowest, pick) {
    const sel = el("select", {
      id: state.id + "-step"
    });
    tl.steps.forEach((s, i) => sel.append(el("option", {
      value: i,
      text: `step ${s.step} (${fmtNs(s.dur)}${s.spanned ? ", its events' span" : ""}${s.apart ? (s.step === 0 ? ", start-up" : ", open at exit") : i === slowest ? ", the slowest" : ""})`
    })));
    sel.value = pick;
    return sel;
  }

  // One lane per thread that synced or launched in step st: its syncs as slices coloured by
  // line, its launches as ticks, and a time axis
  function timelineSvg(run, p, st) {
    const tl = p.timeline;
    const tids = new Set(st.tid ? [st.tid] : []);
    for (let i = 0; i < st.syncs.length; i += SYNC_FIELDS) tids.add(st.syncs[i]);
    for (let i = 0; i < st.launches.length; i += LAUNCH_FIELDS) tids.add(st.launches[i]);
    const lanes = [...tids];
    const name = (tid) => {
      const t = tl.threads.find((x) => x[0] === tid) || p.threads.find((x) => x[0] === tid);
      return (t && t[1] ? t[1] : "thread") + " " + tid;
    };
    const W = Math.max(cardWidth(), 300),
      L = 150,
      LH = 30,
      T = 4,
      H = T + lanes.length * LH + 24;
    let end = st.dur;
    for (let i = 0; i < st.syncs.length; i += SYNC_FIELDS) end = Math.max(end, st.syncs[i + 1] + st.syncs[i + 2]);
    end = end || 1;
    const x = (t) => L + (Math.max(t, 0) / end) * (W - L - 8);
    const svg = sv("svg", {
      width: W,
      height: H,
      viewBox: `0 0 ${W} ${H}`
    });
    lanes.forEach((tid, k) => {
      const y0 = T + k * LH;
      svg.append(sv("rect", {
        x: L,
        y: y0 + 3,
        width: W - L - 8,
        height: LH - 6,
        fill: k % 2 ? "#fafbfc" : "#f4f6f8"
      }));
      const t = sv("text", {
        x: L - 8,
        y: y0 + LH / 2 + 4,
        "text-anchor": "end"
      });
      t.textContent = name(tid);
      svg.append(t);
    });
    const laneY = (tid) => T + lanes.indexOf(tid) * LH;
    for (let i = 0; i < st.launches.length; i += LAUNCH_FIELDS) {
      const xx = x(st.launches[i + 1]),
        y0 = laneY(st.launches[i]);
      svg.append(sv("line", {
        x1: xx,
        x2: xx,
        y1: y0 + LH - 10,
        y2: y0 + LH - 4,
        stroke: "#667085",
        "stroke-width": 1
      }));
    }
    for (let i = 0; i < st.syncs.length; i += SYNC_FIELDS) {
      const tid = st.syncs[i],
        t0 = st.syncs[i + 1],
        dur = st.syncs[i + 2],
        li = st.syncs[i + 3],
        api = S[st.syncs[i + 4]];
      const l = li >= 0 ? run.lines[li] : null;
      const color = l && l.top >= 0 ? COLORS[l.top % COLORS.length] : OTHER;
      const y0 = laneY(tid);
      const r = sv("rect", {
        class: "seg",
        x: x(t0),
        y: y0 + 5,
        width: Math.max(x(t0 + dur) - x(t0), 1.5),
        height: LH - 16,
        fill: color,
        rx: 2
      });
      r.addEventListener("mousemove", (ev) => showTip(ev, `<b>${esc(api)}</b> ${fmtNs(dur)}<br>${l ? "<code>" + esc(l.where) + "</code>" : "(no line)"}<br>at +${fmtNs(t0)} in step ${st.step}`));
      r.addEventListener("mouseleave", hideTip);
      svg.append(r);
    }
    for (let k = 0; k <= 5; k++) {
      const t = sv("text", {
        x: x((end * k) / 5),
        y: H - 6,
        "text-anchor": k === 0 ? "start" : k === 5 ? "end" : "middle"
      });
      t.textContent = fmtNs((end * k) / 5);
      svg.append(t);
    }
    return svg;
  }

  // what the step holds, and what the page's timelines leave out
  function timelineLegend(p, st) {
    const tl = p.timeline;
    return el("div", {
      class: "legend",
      text: `${st.syncs.length / SYNC_FIELDS} syncs${p.launches_traced ? ` and ${st.launches.length / LAUNCH_FIELDS} launches` : ""} in step ${st.step}` +
        (tl.steps.length < p.steps.step.length ? ` (the page carries ${tl.steps.length} steps' timelines: the slowest and evenly spaced ones)` : "") +
        (tl.sample ? `; the timeline has every event of the steps before ${tl.sample[0]}, then those of one step in ${tl.sample[1]}` : "") +
        (st.spanned ? `; step ${st.step} has no step record (SYNCSPY_TRACE_MB folded it): its span is its events'` : "")
    });
  }

  function timelineCard(run, state) {
    const c = card("Timeline of one step", "syncs as slices (coloured by line), kernel launches as ticks, one lane per thread");
    const controls = el("div", {
        class: "controls"
      }),
      body = el("div", {
        id: state.id + "-timeline"
      });
    c.append(controls, body);
    let pick = null;

    function draw() {
      controls.textContent = "";
      body.textContent = "";
      const pi = state.proc >= 0 ? state.proc : run.procs.findIndex((p) => p.timeline);
      const p = run.procs[pi];
      const missing = timelineMissing(run, p, state);
      if (missing) {
        body.append(missing);
        return;
      }
      const tl = p.timeline;
      const slowest = slowestStep(tl);
      if (pick === null || pick >= tl.steps.length) pick = slowest;
      const sel = stepSelect(state, tl, slowest, pick);
      sel.addEventListener("change", () => {
        pick = Number(sel.value);
        draw();
      });
      controls.append(el("label", {
        text: (run.procs.length > 1 ? p.label + ", " : "") + "step:"
      }), sel);
      const st = tl.steps[pick];
      body.append(timelineSvg(run, p, st));
      // launches are ticks only where the agent wrote each one: say how to get them
      if (!p.launches_traced)
        body.append(el("div", {
            class: "launch-note",
            id: state.id + "-launch-note"
          }, "no kernel launches here: they were counted, not traced; run with ",
          el("code", {
            text: "SYNCSPY_LAUNCHES=trace"
          }), " to see each one as a tick"));
      body.append(timelineLegend(p, st));
    }
    draw.part = "timeline";
    state.redraw.push(draw);
    return c;
  }

  // ---- one run ----------------------------------------------------------------------------------
  function runView(run, id, withDetails) {
    const state = {
      id,
      proc: -1,
      sort: "blocked",
      sortDesc: true,
      redraw: []
    };
    const frag = document.createDocumentFragment();
    const hc = card("Report", run.procs.length > 1 ? `${run.procs.length} processes` : run.procs[0].label);
    hc.append(el("pre", {
      class: "header",
      id: id + "-header",
      text: headerText(run)
    }));
    const full = el("details", {}, el("summary", {
      text: "the whole text report (syncspy report)"
    }), el("pre", {
      text: run.report
    }));
    hc.append(full);
    frag.append(hc);
    const pickProc = (i) => {
      state.proc = i;
      if (sel) sel.value = i;
      state.redraw.forEach((f) => f());
    };
    state.pick = pickProc;
    let sel = null;
    if (run.procs.length > 1) {
      sel = el("select", {
          id: id + "-proc"
        }, el("option", {
          value: -1,
          text: `all ${run.procs.length} processes, merged`
        }),
        ...run.procs.map((p, i) => el("option", {
          value: i,
          text: p.label
        })));
      sel.addEventListener("change", () => pickProc(Number(sel.value)));
      hc.append(el("div", {
        class: "controls",
        style: "margin-top:10px"
      }, el("label", {
        text: "show:"
      }), sel));
      if (run.ranks) frag.append(ranksCard(run, state, pickProc));
      frag.append(spreadCard(run, state, pickProc));
    }
    frag.append(chartCard(run, state));
    frag.append(sitesCard(run, state));
    if (withDetails) {
      frag.append(flameCard(run, state));
      frag.append(timelineCard(run, state));
    }
    return {
      frag,
      state
    };
  }

  // ---- the diff form ----------------------------------------------------------------------------
  function diffCard(diff, text) {
    const c = card("Diff", "each line's syncs and blocked time per training step, base -> new, as syncspy diff marks them");
    const i = text.indexOf("\n\n");
    c.append(el("pre", {
      class: "header",
      id: "diff-header",
      text: i < 0 ? text.trim() : text.slice(0, i)
    }));
    const counts = {
      gone: 0,
      fewer: 0,
      same: 0,
      more: 0,
      new: 0
    };
    for (const s of diff.sites) counts[s.change]++;
    const cd = el("div", {
      class: "counts",
      id: "diff-counts"
    });
    for (const k of ["gone", "fewer", "same", "more", "new"])
      if (counts[k]) cd.append(el("span", {
        class: "change " + k,
        "data-change": k,
        text: `${counts[k]} ${k}`
      }));
    c.append(cd);
    const t = el("table", {
      class: "sites",
      id: "diff-sites"
    });
    t.append(el("tr", {}, el("th", {
        class: "l",
        text: "change"
      }), el("th", {
        text: "syncs/step"
      }), el("th", {
        text: "blocked/step"
      }),
      el("th", {
        class: "l",
        text: "api"
      }), el("th", {
        class: "l",
        text: "where"
      })));
    for (const s of diff.sites) {
      const pair = (a, b, f) => (a ? f(a) : "-") + " \u2192 " + (b ? f(b) : "-");
      const where = (s.kind === "line" ? "at " : "backward of ") + (s.function || s.node || "??") + (s.file ? "  " + shortPath(s.file) + ":" + s.line : "");
      t.append(el("tr", {
          "data-change": s.change
        }, el("td", {
          class: "l"
        }, el("span", {
          class: "change " + s.change,
          text: s.change
        })),
        el("td", {
          text: pair(s.base, s.new, (x) => fmtRate(x.syncs_per_step))
        }),
        el("td", {
          text: pair(s.base, s.new, (x) => fmtNs(x.blocked_per_step_ns))
        }),
        el("td", {
          class: "l",
          text: s.api
        }), el("td", {
          class: "where l",
          text: where
        })));
    }
    c.append(t);
    return c;
  }

  function main() {
    const app = document.getElementById("app");
    app.textContent = "";
    document.body.append(tip);
    const runs = DATA.runs;
    const top = el("header", {
        class: "top"
      }, el("h1", {
        text: DATA.kind === "diff" ? "syncspy diff" : "syncspy"
      }),
      el("span", {
        class: "path",
        text: DATA.kind === "diff" ? runs[0].path + "  \u2192  " + runs[1].path : runs[0].path
      }),
      el("span", {
        class: "ver",
        text: "syncspy " + DATA.syncspy
      }));
    const m = el("main");
    app.append(top, m);
    const views = [];
    if (DATA.kind === "diff") {
      m.append(diffCard(DATA.diff, DATA.diff_text || ""));
      runs.forEach((run, i) => {
        const v = runView(run, i ? "new" : "base", false);
        const d = el("details", {
          class: "run",
          id: (i ? "new" : "base") + "-run"
        }, el("summary", {
          text: (i ? "new: " : "base: ") + run.path
        }));
        d.append(v.frag);
        d.addEventListener("toggle", () => v.state.redraw.forEach((f) => f()));
        m.append(d);
        views.push(v);
      });
    } else {
      const v = runView(runs[0], "run", true);
      m.append(v.frag);
      views.push(v);
    }
    // how long each part took to draw (docs/PERFORMANCE.md; tests/browser/probe.py reads it)
    window.syncspyTimings = {
      parse_ms: parsedAt - startedAt
    };
    for (const v of views) v.state.redraw.forEach((f) => {
      const t0 = performance.now();
      f();
      window.syncspyTimings[v.state.id + "." + (f.part || f.name || "part")] = performance.now() - t0;
    });
    let pending = 0;
    window.addEventListener("resize", () => {
      clearTimeout(pending);
      pending = setTimeout(() => (widthCache = 0) || views.forEach((v) => v.state.redraw.forEach((f) => f())), 150);
    });
    document.body.dataset.ready = "1";
  }
  main();
})();
