#!/usr/bin/python3
"""tests/browser/probe.py PAGE [--diff] [--screenshot PNG] [--width W]: opens a page of
`syncspy html` in Debian's chromium, headless, driven by selenium through Debian's
chromium-driver (scripts/deps.sh installs chromium, chromium-driver and python3-selenium; no
browser is downloaded), does what a user does (opens a row, sorts, zooms the flame graph) and
prints, as one JSON object, what the page showed: its console messages, every request it made,
the header, the table's rows, the chart's bars, ... The tests (tests/e2e/test_html.py,
tests/torch/test_html_demo.py) assert on that. Run by Debian's python3, whichever python runs
the tests."""
import argparse
import json
import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

CHROMIUM = os.environ.get("SYNCSPY_CHROMIUM", "/usr/bin/chromium")
DRIVER = os.environ.get("SYNCSPY_CHROMEDRIVER", "/usr/bin/chromedriver")


def start(width, height):
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--window-size={width},{height}", "--hide-scrollbars", "--force-device-scale-factor=1",
              "--no-first-run", "--disable-extensions", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--disable-default-apps"):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service(DRIVER), options=o)


def wait_ready(d, timeout_s):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if d.execute_script("return !!(document.body && document.body.dataset.ready === '1')"):
            return d.execute_script("return performance.now()")
        time.sleep(0.02)
    return None


def rows(d, table):
    return d.execute_script("""
        return [...document.querySelectorAll(arguments[0] + ' tr.row, ' + arguments[0] + ' tr[data-change]')].map(tr => ({
            data: Object.assign({}, tr.dataset), cells: [...tr.children].map(td => td.innerText),
            where: tr.querySelector('td.where') ? tr.querySelector('td.where').innerText : null,
            op: tr.querySelector('td.op') ? tr.querySelector('td.op').innerText : null,
            hint: tr.querySelector('td.hintcol') ? tr.querySelector('td.hintcol').innerText : null,
            hint_title: tr.querySelector('td.hintcol') ? tr.querySelector('td.hintcol').title : null}));""", table)


def requests_made(d):
    urls = []
    for e in d.get_log("performance"):
        m = json.loads(e["message"])["message"]
        if m.get("method") == "Network.requestWillBeSent":
            urls.append(m["params"]["request"]["url"])
    return urls


def text(d, css):
    el = d.find_elements(By.CSS_SELECTOR, css)
    return el[0].text if el else None


def probe_report(d, out):
    out["header"] = text(d, "#run-header")
    out["apart"] = [e.text for e in d.find_elements(By.CSS_SELECTOR, ".apart")]
    out["bars"] = d.execute_script("""return [...document.querySelectorAll('#run-chart g.bar')].map(g => ({
        step: Number(g.dataset.step), wall_ns: Number(g.dataset.wallNs), blocked_ns: Number(g.dataset.blockedNs),
        height: g.querySelector('rect.wall').getBoundingClientRect().height, clipped: g.classList.contains('clipped'),
        clip_label: g.querySelector('text.clip-label') ? g.querySelector('text.clip-label').textContent : null,
        has_break: !!g.querySelector('path.break')}));""")
    out["chart"] = d.execute_script("""const s = document.querySelector('#run-chart svg'); return s ? {
        plot_h: Number(s.dataset.plotH), scale_ns: Number(s.dataset.scaleNs),
        legend: document.querySelector('#run-chart .legend').innerText} : null;""")
    out["rows"] = rows(d, "#run-sites")
    # issue 35 item 1: a row's every op, one sub-row each under it
    out["op_rows"] = d.execute_script("""return [...document.querySelectorAll('#run-sites tr.oprow[data-op]')].map(tr => ({
        data: Object.assign({}, tr.dataset), cells: [...tr.children].map(td => td.innerText),
        hint: tr.querySelector('td.hintcol').innerText}));""")
    out["headers"] = d.execute_script("return [...document.querySelectorAll('#run-sites thead th')].map(th => th.innerText.replace(/ [\u25be\u25b4]$/, ''))")
    # issue 24: the estimated part of backward rows, the report's words and one sub-row per line
    out["estimate_notes"] = d.execute_script("""return [...document.querySelectorAll('#run-sites tr.est-note')].map(tr => ({
        line: Number(tr.dataset.line), text: tr.innerText}));""")
    out["estimate_shares"] = d.execute_script("""return [...document.querySelectorAll('#run-sites tr.est-share')].map(tr => ({
        data: Object.assign({}, tr.dataset), cells: [...tr.children].map(td => td.innerText),
        where: tr.querySelector('td.where').innerText}));""")
    # the heaviest row of the program's own line (not a backward row): its stack, source, hint
    first = d.find_elements(By.CSS_SELECTOR, "#run-sites tr.row[data-kind=line]")
    if first:
        out["opened_row"] = first[0].find_element(By.CSS_SELECTOR, "td.where").text
        first[0].click()
        out["opened"] = {"stack": text(d, "#run-sites tr.detail .stack"), "source": text(d, "#run-sites tr.detail .source"),
                         "hint": text(d, "#run-sites tr.detail .hint"), "detail": text(d, "#run-sites tr.detail")}
        d.find_elements(By.CSS_SELECTOR, "#run-sites tr.row[data-kind=line]")[0].click()
        out["closed_details"] = len(d.find_elements(By.CSS_SELECTOR, "#run-sites tr.detail"))
    backward = d.find_elements(By.CSS_SELECTOR, "#run-sites tr.row[data-kind=backward]")
    if backward:
        backward[0].click()
        out["opened_backward"] = text(d, "#run-sites tr.detail")
        d.find_elements(By.CSS_SELECTOR, "#run-sites tr.row[data-kind=backward]")[0].click()
    sort = {}
    for key in ("syncs", "where"):
        th = d.find_element(By.CSS_SELECTOR, f"#run-sites th[data-sort={key}]")
        th.click()
        sort[key + "_1"] = rows(d, "#run-sites")
        th.click()
        sort[key + "_2"] = rows(d, "#run-sites")
    out["sorted"] = sort
    d.find_element(By.CSS_SELECTOR, "#run-sites th[data-sort=blocked]").click()
    f = d.find_element(By.CSS_SELECTOR, "#run-filter")
    f.send_keys("cross_entropy")
    out["filtered"] = rows(d, "#run-sites")
    f.clear()
    d.execute_script("arguments[0].dispatchEvent(new Event('input'))", f)
    out["flame_rows"] = d.execute_script("""return [0, 1, 2, 3, 4].map(k => [...document.querySelectorAll('#run-flame div.n[data-d="' + k + '"]')]
        .map(n => n.textContent));""")
    out["flame_cut"] = text(d, "#run-flame-cut")
    out["flame_nodes"] = len(d.find_elements(By.CSS_SELECTOR, "#run-flame div.n"))
    deeper = d.find_elements(By.CSS_SELECTOR, "#run-flame div.n")
    if len(deeper) > 3:
        d.execute_script("arguments[0].click()", deeper[3])
        out["flame_zoomed_crumbs"] = d.execute_script("return document.querySelector('#run-flame').previousElementSibling.innerText")
        out["flame_zoomed_nodes"] = len(d.find_elements(By.CSS_SELECTOR, "#run-flame div.n"))
    out["launch_note"] = text(d, "#run-launch-note")
    out["launch_ticks"] = len(d.find_elements(By.CSS_SELECTOR, "#run-timeline svg line"))
    out["timeline_legend"] = text(d, "#run-timeline .legend")
    out["timeline_slices"] = len(d.find_elements(By.CSS_SELECTOR, "#run-timeline rect.seg"))
    out["timeline_steps"] = len(d.find_elements(By.CSS_SELECTOR, "#run-step option"))
    out["timeline_shown"] = d.execute_script("const s = document.querySelector('#run-step'); return s ? s.options[s.selectedIndex].text : null")
    out["procs"] = len(d.find_elements(By.CSS_SELECTOR, "#run-proc option"))


def probe_ranks(d, out):
    """The per-rank card (#run-ranks) as shown, then a click on the first straggler's name (or
    the most blocked rank's): what the page then shows of that process alone."""
    card = d.find_elements(By.CSS_SELECTOR, "#run-ranks")
    if not card:
        return
    out["ranks"] = d.execute_script("""
        const c = document.querySelector('#run-ranks');
        const row = (cls) => { const r = c.querySelector('.rank-row.' + cls); return r ? {text: r.innerText,
            procs: [...r.querySelectorAll('a.rank')].map(a => Number(a.dataset.proc))} : null; };
        const fig = (k) => { const r = c.querySelector('tr[data-fig=' + k + ']'); return {
            min: r.querySelector('td.min').innerText, median: r.querySelector('td.median').innerText,
            max: r.querySelector('td.max').innerText,
            procs: [...r.querySelectorAll('a.rank')].map(a => Number(a.dataset.proc))}; };
        return {header: c.querySelector('.rank-header').innerText, syncs: fig('syncs'), share: fig('share'),
            waits_most: row('waits-most'), stragglers: row('stragglers'), no_step: row('no-step'),
            partial_title: c.querySelector('.rank-row.partial > b').innerText,
            partial: [...c.querySelectorAll('.partial-line')].map(l => ({line: Number(l.dataset.line),
                where: l.querySelector('code').innerText, on: l.querySelector('.on').innerText,
                procs: [...l.querySelectorAll('a.rank')].map(a => Number(a.dataset.proc))})),
            procs: [...document.querySelectorAll('#run-procs tbody tr[data-proc]')].map(tr => ({
                proc: Number(tr.dataset.proc), cells: [...tr.children].map(td => td.innerText)}))};""")
    links = d.find_elements(By.CSS_SELECTOR, "#run-ranks .rank-row.stragglers a.rank") or \
        d.find_elements(By.CSS_SELECTOR, "#run-ranks .rank-row.waits-most a.rank")
    if links:
        links[0].click()
        out["ranks_picked"] = d.execute_script("""return {proc: Number(document.querySelector('#run-proc').value),
            selected_rows: [...document.querySelectorAll('#run-procs tr.sel')].map(tr => Number(tr.dataset.proc)),
            selected_links: [...document.querySelectorAll('#run-ranks a.rank.sel')].map(a => a.innerText),
            bars: document.querySelectorAll('#run-chart g.bar').length,
            timeline: (document.querySelector('#run-timeline').innerText || '').slice(0, 300),
            controls: (document.querySelector('#run-step') ? document.querySelector('#run-step').parentElement.innerText : '')};""")


def probe_diff(d, out):
    out["diff_header"] = text(d, "#diff-header")
    out["diff_counts"] = [e.text for e in d.find_elements(By.CSS_SELECTOR, "#diff-counts .change")]
    out["diff_rows"] = rows(d, "#diff-sites")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--diff", action="store_true")
    ap.add_argument("--screenshot")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--open-first", action="store_true", help="open the first row before the screenshot")
    ap.add_argument("--full", action="store_true", help="the screenshot holds the whole page")
    ap.add_argument("--at", help="the screenshot starts at this element (a CSS selector)")
    ap.add_argument("--load-only", action="store_true", help="only load it (a timing)")
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    d = start(a.width, a.height)
    out = {}
    try:
        d.set_page_load_timeout(a.timeout)
        d.get("file://" + os.path.abspath(a.page))
        out["load_ms"] = wait_ready(d, a.timeout)
        out["timings"] = d.execute_script("return window.syncspyTimings || null")
        if out["load_ms"] is not None and not a.load_only:
            (probe_diff if a.diff else probe_report)(d, out)
            if not a.diff:
                probe_ranks(d, out)
        if a.screenshot:
            if a.at:
                d.execute_script("const e = document.querySelector(arguments[0]); if (e) window.scrollTo(0, e.getBoundingClientRect().top + window.scrollY - 8);", a.at)
            if a.open_first:
                d.execute_script("window.scrollTo(0,0); const r = document.querySelector('#run-sites tr.row'); if (r) r.click();")
            if a.full:
                hgt = d.execute_script("return document.documentElement.scrollHeight")
                d.set_window_size(a.width, min(max(hgt, a.height), 6000))
            time.sleep(0.3)
            d.save_screenshot(a.screenshot)
        out["console"] = [[e["level"], e["message"]] for e in d.get_log("browser")]
        out["requests"] = requests_made(d)
    finally:
        d.quit()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
