// podstep's live page: the run's recording lines, as server-sent events
// (/events), drawn into the page. Every text from the run goes in with
// textContent, never as HTML. Nothing is sent back: the page only reads.
"use strict";
// fold:begin
// podstepFoldPod returns the whole pod after a step line's pod_delta
// (recording format 2; Go: report.PodDelta.Apply), given the whole pod
// before; null when a delta does not fit it. The pod before is not
// changed.
function podstepFoldPod(prev, d) {
  const ps = prev.status || {};
  const st = Object.assign({}, d.status || ps);
  const fields = { init: "initContainerStatuses", regular: "containerStatuses", ephemeral: "ephemeralContainerStatuses" };
  delete st.conditions;
  for (const f of Object.values(fields)) delete st[f];
  const was = new Map((ps.conditions || []).map((c) => [c.type, c]));
  const changed = new Map((d.conditions || []).map((c) => [c.type, c]));
  const conds = [];
  for (const t of d.condition_types || (ps.conditions || []).map((c) => c.type)) {
    const old = was.get(t), c = changed.get(t);
    if (!c) { if (!old) return null; conds.push(old); continue; }
    const n = Object.assign({}, c);
    if (n.message_edit) {
      const e = n.message_edit, r = Array.from((old && old.message) || "");
      if (!old || e.at > r.length || e.at + e.cut > r.length) return null;
      r.splice(e.at, e.cut, ...Array.from(e.put));
      n.message = r.join("");
      delete n.message_edit;
    }
    conds.push(n);
  }
  if (conds.length) st.conditions = conds;
  for (const [kind, f] of Object.entries(fields)) {
    const before = ps[f] || [];
    const news = new Map();
    for (const c of d.containers || []) if (c.kind === kind) { const n = Object.assign({}, c); delete n.kind; news.set(n.name, n); }
    const lists = d.container_lists || {};
    const names = Object.prototype.hasOwnProperty.call(lists, kind) ? lists[kind] : before.map((c) => c.name);
    const byName = new Map(before.map((c) => [c.name, c]));
    const list = [];
    for (const n of names) {
      const c = news.get(n) || byName.get(n);
      if (!c) return null;
      list.push(c);
    }
    if (list.length) st[f] = list;
  }
  return { phase: d.phase, display: d.display, ready: d.ready, restarts: d.restarts, status: st };
}
// fold:end
// pleg:begin
// podstepPLEG is the node's PLEG banner for a "pleg" line (podstep
// proxy's note on the kubelet's relists), sinceMs after it came: its text,
// the ages ticking, and whether PLEG is unhealthy (the node NotReady);
// null for "relisted" (the relists go through again: no banner).
function podstepPLEG(m, sinceMs) {
  if (!m || m.event === "relisted") return null;
  const dur = (msv) => {
    const s = Math.max(0, Math.floor(msv / 1000));
    if (msv < 10000) return (Math.max(0, msv) / 1000).toFixed(1) + "s";
    const h = Math.floor(s / 3600), mn = Math.floor((s % 3600) / 60), r = s % 60;
    return (h ? h + "h" : "") + (h || mn ? mn + "m" : "") + r + "s";
  };
  const a = (m.age_ms || 0) + sinceMs, th = m.threshold_ms || 180000;
  const severe = m.event === "unhealthy" || a >= th;
  let t = "PLEG: the kubelet's last relist was " + dur(a) + " ago";
  t += severe ? ": PLEG is not healthy (over " + dur(th) + "): the node is NotReady and the kubelet syncs no pod until a relist goes through"
    : " (every 1s when the runtime answers; PLEG turns unhealthy at " + dur(th) + ": the node goes NotReady)";
  if (m.open) t += "; waiting on " + m.open.method + " #" + m.open.seq + " " + dur((m.open.age_ms || 0) + sinceMs) + ", no answer";
  return { text: t, severe: severe };
}
// pleg:end
(function () {
  const $ = (id) => document.getElementById(id);
  const FOLD_MS = 1000; // a gap longer than this between steps is folded
  const FOLD_AS = 150;  // ... and drawn as this many ms
  let plan = [], done = {}, bars = [], events = [], finished = false;
  // pod is the whole pod after the last step (a step line has it whole,
  // or what changed: pod_delta); null until a whole one came.
  let pod = null;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function clear(e) { while (e.firstChild) e.removeChild(e.firstChild); }
  function ms(v) {
    if (v === undefined || v === null) return "";
    if (v < 1) return v.toFixed(2) + "ms";
    if (v < 1000) return Math.round(v) + "ms";
    return (v / 1000).toFixed(v < 10000 ? 2 : 1) + "s";
  }
  const stageClass = (s) => "st-" + String(s || "").replace(/[^a-z-]/g, "");
  const stateClass = (s) => String(s || "pending").replace(/[^a-z]/g, "");
  const icon = { pending: "·", running: "▶", done: "✓", failed: "✗", skipped: "⊘" };

  function reset() {
    plan = []; done = {}; bars = []; events = []; finished = false; pod = null;
    ["steps", "events", "timeline", "containers", "podfacts", "scenario"].forEach((id) => clear($(id)));
    $("scenario").hidden = true;
    stuck = null; drawStuck();
    pleg = null; drawPLEG();
    fitDisplay("—"); $("outcome").textContent = ""; $("outcome").className = "badge";
    $("failure").hidden = true; $("lost").hidden = true; $("now").textContent = "";
  }

  function drawSteps() {
    const ol = $("steps");
    clear(ol);
    // The steps that ran to their end (done or failed), as the TUI's plan
    // pane counts them (steps.Ended in Go): one counter for both.
    let n = 0;
    for (const p of plan) {
      const s = done[p.id] || p;
      ol.appendChild(stepRow(s, p));
      if (s.state === "done" || s.state === "failed") n++;
    }
    $("count").textContent = n + " / " + plan.length;
    const cur = ol.querySelector("li.running") || ol.querySelector("li.pending");
    if (cur) cur.scrollIntoView({ block: "nearest" });
  }
  // explained is a failure's explanation (internal/explain) in one line.
  function explained(x) {
    return "why: " + (x.title || "") + (x.fix ? " · fix: " + x.fix : "") + " (podstep explain " + (x.id || "") + ")";
  }
  function stepRow(s, p) {
    const st = stateClass(s.state);
    const li = el("li", stateClass(st) + " " + stageClass(s.stage || p.stage));
    li.dataset.step = s.id; li.dataset.state = st;
    li.appendChild(el("span", "icon", icon[st] || "·"));
    li.appendChild(el("span", "id", s.id));
    const name = el("span", "name", s.name || p.name);
    name.title = s.title || p.title || "";
    li.appendChild(name);
    li.appendChild(el("span", "dur", s.duration_ms !== undefined ? ms(s.duration_ms) : ""));
    if (st === "failed" && (s.reason || s.message)) li.appendChild(el("span", "why", (s.reason || "") + (s.message ? ": " + s.message : "")));
    if (st === "failed" && s.explanation) li.appendChild(el("span", "explain", explained(s.explanation)));
    return li;
  }

  function onPlan(p) {
    plan = plan.filter((s) => s.id < p.from).concat(p.steps || []);
    drawSteps();
  }
  function onStarted(s) {
    const p = plan.find((x) => x.id === s.id);
    if (p) { p.state = "running"; drawSteps(); }
    const now = $("now"); clear(now);
    now.appendChild(el("span", "", "▶ step " + s.id + " "));
    now.appendChild(el("span", "name", s.name));
  }
  function onStep(s) {
    done[s.id] = s;
    const p = plan.find((x) => x.id === s.id);
    if (p) p.state = s.state; else plan.push(s);
    drawSteps();
    const now = $("now"); clear(now);
    now.appendChild(el("span", "", (icon[s.state] || "") + " step " + s.id + " "));
    now.appendChild(el("span", "name", s.name));
    now.appendChild(el("span", "", " " + (s.summary || "")));
    if (s.pod) pod = s.pod;
    else if (s.pod_delta) pod = pod && podstepFoldPod(pod, s.pod_delta);
    if (pod) drawPod(pod);
    for (const e of s.events || []) events.push(e);
    drawEvents();
    addBar(s);
  }

  // fitDisplay shows the big STATUS whole: the stylesheet sizes it to the
  // pane (clamp, cqi); a longer one (CreateContainerConfigError) is made
  // smaller until it fits, never cut.
  function fitDisplay(text) {
    const d = $("display");
    d.textContent = text;
    d.style.fontSize = "";
    let size = parseFloat(getComputedStyle(d).fontSize);
    while (d.scrollWidth > d.clientWidth && size > 12) {
      size -= 2;
      d.style.fontSize = size + "px";
    }
  }
  window.addEventListener("resize", () => fitDisplay($("display").textContent));

  function drawPod(pod) {
    fitDisplay(pod.display || pod.phase || "—");
    const dl = $("podfacts"); clear(dl);
    const st = pod.status || {};
    const facts = [["phase", pod.phase], ["ready", pod.ready], ["restarts", pod.restarts], ["IP", st.podIP]];
    for (const c of st.conditions || []) facts.push([c.type, c.status]);
    for (const [k, v] of facts) {
      if (v === undefined || v === null || v === "") continue;
      // A pair is one box that wraps as a whole; only the IP (a long
      // token: IPv6) may break inside.
      const f = el("div", "fact");
      f.appendChild(el("dt", "", k)); f.appendChild(el("dd", k === "IP" ? "token" : "", v));
      dl.appendChild(f);
    }
    const ul = $("containers"); clear(ul);
    const all = (st.initContainerStatuses || []).concat(st.containerStatuses || []);
    for (const c of all) {
      const li = el("li");
      li.appendChild(el("span", "cname", c.name));
      const s = c.state || {};
      let what = "";
      if (s.running) what = "running";
      else if (s.waiting) what = "waiting: " + (s.waiting.reason || "");
      else if (s.terminated) what = "terminated: " + (s.terminated.reason || "") + " (exit " + s.terminated.exitCode + ")";
      li.appendChild(el("span", "", " " + what + (c.ready ? ", ready" : "") + (c.restartCount ? ", restarts " + c.restartCount : "")));
      ul.appendChild(li);
    }
  }

  function drawEvents() {
    const ol = $("events"); clear(ol);
    for (const e of events.slice(-40).reverse()) {
      const li = el("li", e.type === "Warning" ? "Warning" : "Normal");
      li.appendChild(el("span", "reason", e.reason));
      li.appendChild(el("span", "", " " + (e.object ? e.object + ": " : "") + (e.message || "")));
      ol.appendChild(li);
    }
  }

  // The timeline: one bar per finished step, on a time axis where a gap
  // between steps longer than FOLD_MS (a person thinking at a keypress, a
  // back-off) is folded to FOLD_AS and marked.
  function addBar(s) {
    const start = Date.parse(s.started);
    if (isNaN(start)) return;
    const row = el("div", "row");
    const bar = el("div", "bar " + stageClass(s.stage) + (s.state === "failed" ? " failed" : ""));
    bar.dataset.step = s.id;
    bar.dataset.end = String(start + (s.duration_ms || 0));
    bar.title = s.id + " " + s.name + " " + ms(s.duration_ms);
    row.appendChild(bar);
    $("timeline").appendChild(row);
    bars.push({ start: start, dur: s.duration_ms || 0, bar: bar, row: row, fold: null });
    layout();
  }
  function layout() {
    let x = 0, prevEnd = null, folded = 0;
    const pos = [];
    for (const b of bars) {
      let gap = prevEnd === null ? 0 : Math.max(0, b.start - prevEnd);
      const fold = gap > FOLD_MS;
      if (fold) { folded += gap - FOLD_AS; gap = FOLD_AS; }
      x += gap;
      pos.push([x, fold]);
      x += b.dur;
      prevEnd = Math.max(prevEnd === null ? 0 : prevEnd, b.start + b.dur);
    }
    const span = Math.max(x, 1);
    bars.forEach((b, i) => {
      b.bar.style.left = (100 * pos[i][0] / span) + "%";
      b.bar.style.width = (100 * b.dur / span) + "%";
      if (pos[i][1] && !b.fold) { b.fold = el("div", "fold"); b.row.appendChild(b.fold); }
      if (b.fold) b.fold.style.left = (100 * Math.max(0, pos[i][0] - FOLD_AS / 2) / span) + "%";
    });
    $("span").textContent = ms(x) + " shown" + (folded > 0 ? ", " + ms(folded) + " of idle time folded (▦)" : "");
  }

  function onStart(s) {
    $("pod").textContent = s.pod || "";
    const rt = s.runtime || {};
    $("runtime").textContent = "runtime " + (rt.endpoint || "") + (rt.simulated ? " (SIMULATED)" : "") + (rt.why ? " — " + rt.why : "");
    document.title = "podstep live: " + (s.pod || "");
  }
  // The built-in scenario the run is, and its lesson (not in predict
  // mode: the server leaves it out there).
  function onScenario(s) {
    const p = $("scenario"); clear(p);
    p.appendChild(el("strong", "", "scenario " + s.name + ": "));
    p.appendChild(el("span", "", s.story || ""));
    if (s.lesson) p.appendChild(el("span", "lesson", " Lesson: " + s.lesson));
    if (s.fix) p.appendChild(el("span", "fix", " Fix: " + s.fix));
    p.hidden = false;
  }
  function onSummary(s) {
    finished = true;
    const o = $("outcome");
    o.textContent = (s.outcome || "") + " · exit " + s.exit_code;
    o.className = "badge " + stateClass(s.outcome);
    if (s.failure) {
      const f = $("failure");
      f.textContent = "✗ " + s.failure.stage + " / " + s.failure.step + ": " + s.failure.reason + ": " + s.failure.message +
        (s.failure.explanation ? " — " + explained(s.failure.explanation) : "");
      f.hidden = false;
    }
    if (s.display) fitDisplay(s.display);
    $("now").textContent = "the run ended";
  }

  // The stuck-at view (podstep proxy): the pod's calls in flight and why
  // it waits, from the last "stuck" line; their ages tick here, from the
  // time each was sent (the page's clock against the node's: the line's
  // "at" and age_ms fix the offset).
  let stuck = null, stuckAt = 0;
  function age(msv) {
    const s = Math.max(0, Math.floor(msv / 1000));
    if (msv < 10000) return (Math.max(0, msv) / 1000).toFixed(1) + "s";
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    return (h ? h + "h" : "") + (h || m ? m + "m" : "") + r + "s";
  }
  function drawStuck() {
    const box = $("stuck"), ul = $("stuck-calls"), wp = $("stuck-wait");
    clear(ul);
    const calls = (stuck && stuck.calls) || [], wt = stuck && stuck.waiting;
    box.hidden = !calls.length && !wt;
    const since = Date.now() - stuckAt;
    for (const c of calls) {
      const a = c.age_ms + since;
      let t = c.method + " #" + c.seq + (c.container ? " (" + c.container + ")" : "") + " " + age(a) + ", no answer";
      let cls = "stuck-call";
      if (c.deadline_ms) {
        if (a >= c.deadline_ms) { t += " — past the kubelet's deadline: it gave up at " + age(c.deadline_ms) + " and will retry"; cls += " past"; }
        else t += " — the kubelet gives up at " + age(c.deadline_ms) + " (" + age(c.deadline_ms - a) + " left)";
      } else t += " — no deadline";
      t += "; " + c.rule;
      if (c.try > 1) t += "; sandbox try " + c.try + (c.previous ? ", the previous: " + c.previous : "");
      if (c.collides_with) t += "; the same name as " + c.collides_with.method + " #" + c.collides_with.seq +
        (c.collides_with.state === "gave-up" ? " (given up on)" : " (still open)") + ": the runtime holds the name";
      ul.appendChild(el("li", cls, t));
    }
    wp.hidden = !wt;
    if (wt) wp.textContent = "waiting: " + wt.text;
  }
  function onStuck(m) {
    stuck = m; stuckAt = Date.now(); drawStuck();
  }
  setInterval(() => { if (stuck && (stuck.calls || []).length) drawStuck(); }, 1000);

  // The node's PLEG banner (podstep proxy), from the last "pleg" line: the
  // node's, not the pod's (the proxy gives it again after a start over).
  let pleg = null, plegAt = 0;
  function drawPLEG() {
    const b = $("pleg"), v = podstepPLEG(pleg, Date.now() - plegAt);
    b.hidden = !v;
    if (!v) return;
    b.textContent = v.text;
    b.className = v.severe ? "pleg severe" : "pleg";
  }
  function onPLEG(m) { pleg = m; plegAt = Date.now(); drawPLEG(); }
  setInterval(() => { if (pleg) drawPLEG(); }, 1000);

  function onLine(e) {
    let m;
    try { m = JSON.parse(e.data); } catch (_) { return; }
    switch (m.type) {
      case "start": onStart(m); break;
      case "scenario": onScenario(m); break;
      case "plan": onPlan(m); break;
      case "step-started": onStarted(m); break;
      case "step": onStep(m); break;
      case "summary": onSummary(m); break;
      case "stuck": onStuck(m); break;
      case "pleg": onPLEG(m); break;
    }
  }

  const conn = $("conn");
  const es = new EventSource("/events");
  es.addEventListener("hello", () => { reset(); conn.textContent = "live"; conn.className = "conn live"; });
  es.addEventListener("lost", (e) => {
    const l = $("lost"); l.hidden = false;
    l.textContent = "This page joined late: " + JSON.parse(e.data).messages + " early messages were not kept.";
  });
  es.addEventListener("end", () => {
    es.close(); conn.textContent = "ended"; conn.className = "conn";
  });
  es.onmessage = onLine;
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED || !finished) { conn.textContent = "reconnecting…"; conn.className = "conn lost"; }
    if (finished && es.readyState !== EventSource.OPEN) { es.close(); conn.textContent = "ended"; conn.className = "conn"; }
  };
})();
