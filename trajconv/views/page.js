// trajconv show --format html: renders the records embedded as JSON, a window at a time
// (a small session comes written into the page as HTML: meta.eager, adopt()).
// Session text only ever reaches the page through textContent, never as HTML.
// This script runs before the data blocks are parsed: trajconvStart() (called after the
// first block) shows the first window; search and filters wait for the rest.
(function () {
  "use strict";
  var loaded = false, waiting = [];
  function whenLoaded(fn) { if (loaded) fn(); else waiting.push(fn); }
  document.addEventListener("DOMContentLoaded", function () {
    loaded = true;
    document.body.dataset.loaded = Math.round(performance.now());
    waiting.splice(0).forEach(function (fn) { fn(); });
  });
  var meta = JSON.parse(document.getElementById("meta").textContent);
  var CHUNK = meta.chunk, WINDOW = 50, SHOW = 2000;
  var NAMES = { u: "user", a: "assistant", r: "reasoning", c: "tool call", o: "result", s: "system", b: "observation" };
  var LETTER = { user: "u", assistant: "a", reasoning: "r", "tool-call": "c", "tool-result": "o", system: "s", observation: "b" };
  var cache = Object.create(null);
  var own = function (o, k) { return Object.prototype.hasOwnProperty.call(o, k); };

  function block(m, b) {
    var key = m + "-" + b;
    if (!own(cache, key)) {
      var data = document.getElementById("d" + key);
      if (!data || (!loaded && !data.nextSibling)) return null; // not parsed (whole) yet
      cache[key] = JSON.parse(data.textContent);
    }
    return cache[key];
  }
  function rec(m, i) {
    var b = block(m, Math.floor(i / CHUNK));
    return b ? b[i % CHUNK] : null;
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function n(x) { return x.toLocaleString("en"); }
  function turnKey(r) { return r.t === null ? "none" : String(r.t); }
  function turnLabel(r) { return r.t === null ? "Outside a turn" : "Turn " + r.t; }

  var query = "", unfold = null, subHits = Object.create(null);
  function matches(r, q) {
    return (r.x && r.x.toLowerCase().indexOf(q) >= 0) || (r.n && r.n.toLowerCase().indexOf(q) >= 0) ||
      (r.c && r.c.toLowerCase().indexOf(q) >= 0) || r.i.toLowerCase().indexOf(q) >= 0;
  }

  function kids(k) {
    var s = meta.sessions[k], out = s.unplaced.slice();
    Object.keys(s.under).forEach(function (c) { out = out.concat(s.under[c]); });
    return out;
  }
  function subMatches(k, q) {
    // a sub-agent session (or one below it) has a record matching q
    var s = meta.sessions[k];
    for (var i = 0; i < s.count; i++) if (matches(rec(k, i), q)) return true;
    return kids(k).some(function (c) { return subMatches(c, q); });
  }

  function bodyOf(r, pre) {
    var e = el(pre ? "pre" : "div", "body"), x = r.x || "";
    if (x.length <= SHOW) { e.textContent = x; return [e]; }
    e.textContent = x.slice(0, SHOW);
    var more = el("button", "more", "show all " + n(x.length) + " characters (" + n(x.length - SHOW) + " more)");
    more.type = "button";
    more.addEventListener("click", function () { e.textContent = x; more.remove(); });
    return [e, more];
  }

  function card(m, i) {
    var r = rec(m, i);
    var d = el("details", "rec k-" + r.k);
    d.dataset.m = m; d.dataset.i = i;
    d.open = unfold !== null ? unfold : r.k !== "r";
    if (r.k === "o" && r.f) d.classList.add("failed");
    if (query && (matches(r, query) || (r.k === "c" && m === 0 && own(subHits, r.c)))) {
      d.classList.add("hit"); d.open = true;
    }
    var s = el("summary");
    var who = r.k === "c" ? "⚙ " + r.n : r.k === "o" ? (r.f ? "✗ result of " : "✓ result of ") + r.n : NAMES[r.k];
    s.append(el("span", "who", who));
    if (r.c !== undefined) s.append(el("span", "mono when", r.c + " "));
    if (r.st !== undefined) s.append(el("span", "st", r.st + " "));
    if (r.k === "r") s.append(el("span", "note", n(r.x.length) + " characters "));
    if (r.o) s.append(el("span", "when", r.o + " "));
    if (r.m) s.append(el("span", "when", r.m));
    d.append(s);
    d.append(el("div", "prov mono", "#" + r.s + " · " + r.i + " · " + r.e + " · " + r.h));
    bodyOf(r, r.k === "c" || r.k === "o").forEach(function (x) { d.append(x); });
    if (r.k === "c" && own(meta.sessions[m].under, r.c)) {
      meta.sessions[m].under[r.c].forEach(function (k) {
        var box = subagent(k, "spawned by this call: ");
        d.append(box);
        if (query && subMatches(k, query)) box.firstChild.open = true; // show the hits inside
      });
    }
    return d;
  }

  function subagent(k, prefix) {
    var s = meta.sessions[k], box = el("div", "sub"), det = el("details"), filled = false;
    box.dataset.sub = k;
    det.append(el("summary", "subhead", "sub-agent " + s.id + " · " + s.title + " · " + n(s.count) +
      " records · " + (s.how ? prefix + s.how : "spawning call not found")));
    det.addEventListener("toggle", function () {
      if (!det.open || filled) return;
      filled = true;
      var list = el("div");
      det.append(list);
      whenLoaded(function () { renderChild(k, list); });
      var link = el("a", "note", "its diagnostics");
      link.href = "#diagnostics-" + k;
      det.append(link);
    });
    box.append(det);
    return box;
  }

  function renderChild(k, list) {
    var s = meta.sessions[k], at = 0, last;
    function more() {
      var end = Math.min(s.count, at + 500), frag = document.createDocumentFragment();
      for (; at < end; at++) {
        var r = rec(k, at);
        if (turnKey(r) !== last) { last = turnKey(r); frag.append(el("div", "turn", turnLabel(r))); }
        frag.append(card(k, at));
      }
      list.append(frag);
      if (at < s.count) {
        var b = el("button", "more", "show " + n(Math.min(500, s.count - at)) + " more of " + n(s.count - at));
        b.type = "button";
        b.addEventListener("click", function () { b.remove(); more(); });
        list.append(b);
      }
    }
    more();
    s.unplaced.forEach(function (c) { list.append(subagent(c, "")); });
  }

  // -- the main timeline: a view (indices of records shown) rendered a window at a time
  var main = meta.sessions[0];
  var started = false;
  var timeline = document.getElementById("timeline"), sentinel = document.getElementById("sentinel");
  var status = document.getElementById("status");
  var view = null, pos = 0, lastTurn, folded = Object.create(null);
  function viewLength() { return view ? view.length : main.count; }

  function showStatus() {
    var what = query ? n(viewLength()) + " matching records" : n(viewLength()) + " records in view";
    status.textContent = what + ", " + n(pos) + " rendered, of " + n(main.count);
  }

  function renderMore(count) {
    var end = Math.min(viewLength(), pos + count), frag = document.createDocumentFragment();
    for (; pos < end; pos++) {
      var i = view ? view[pos] : pos, r = rec(0, i);
      if (!r) { whenLoaded(fill); break; } // its block is not parsed yet
      var t = turnKey(r);
      if (t !== lastTurn) {
        lastTurn = t;
        var h = el("div", "turn", turnLabel(r));
        h.dataset.turn = t; h.tabIndex = 0; h.setAttribute("role", "button");
        if (folded[t]) h.classList.add("folded");
        frag.append(h);
      }
      var c = card(0, i);
      c.dataset.turn = t;
      if (folded[t]) c.hidden = true;
      frag.append(c);
    }
    timeline.append(frag);
    if (pos === viewLength() && main.unplaced.length && !timeline.querySelector(":scope > .sub")) {
      main.unplaced.forEach(function (k) { timeline.append(subagent(k, "")); });
    }
    showStatus();
  }

  function fill() {
    // keep rendering while the end of what is rendered is on screen (folded turns, short records)
    var guard = 0;
    while (pos < viewLength() && sentinel.getBoundingClientRect().top < window.innerHeight + 800 && guard++ < 50) {
      renderMore(WINDOW);
    }
  }

  function rebuild() {
    if (!loaded) { status.textContent = "reading the rest of the session…"; whenLoaded(rebuild); return; }
    var boxes = document.querySelectorAll("input.kind"), on = Object.create(null), all = true;
    boxes.forEach(function (b) { if (b.checked) on[LETTER[b.value]] = true; else all = false; });
    subHits = Object.create(null);
    if (query) {
      Object.keys(main.under).forEach(function (c) {
        if (main.under[c].some(function (k) { return subMatches(k, query); })) subHits[c] = true;
      });
    }
    if (all && !query) view = null;
    else {
      view = [];
      for (var i = 0; i < main.count; i++) {
        if (!on[main.kinds[i]]) continue;
        if (query) {
          var r = rec(0, i);
          if (!matches(r, query) && !(r.k === "c" && own(subHits, r.c))) continue;
        }
        view.push(i);
      }
    }
    pos = 0; lastTurn = undefined; timeline.textContent = "";
    renderMore(WINDOW);
    fill();
  }

  function toggleTurn(h) {
    var t = h.dataset.turn, hide = !folded[t];
    if (hide) folded[t] = true; else delete folded[t];
    h.classList.toggle("folded", hide);
    timeline.querySelectorAll(':scope > details.rec[data-turn="' + CSS.escape(t) + '"]').forEach(function (c) { c.hidden = hide; });
    fill();
  }

  function adopt() {
    // a small session came written into the page: take its cards as rendered, and put
    // each sub-agent under the call that spawned it once every block is read
    pos = main.count;
    var turns = timeline.querySelectorAll(":scope > .turn");
    if (turns.length) lastTurn = turns[turns.length - 1].dataset.turn;
    whenLoaded(function () {
      timeline.querySelectorAll(":scope > details.rec.k-c").forEach(function (d) {
        var r = rec(0, Number(d.dataset.i));
        if (r && own(main.under, r.c)) {
          main.under[r.c].forEach(function (k) { d.append(subagent(k, "spawned by this call: ")); });
        }
      });
      main.unplaced.forEach(function (k) { timeline.append(subagent(k, "")); });
    });
  }

  function start() {
    if (started) return;
    started = true;
    timeline.addEventListener("click", function (ev) {
      var h = ev.target.closest(".turn");
      if (h && h.parentNode === timeline) toggleTurn(h);
    });
    timeline.addEventListener("keydown", function (ev) {
      var h = ev.target.closest(".turn");
      if (h && h.parentNode === timeline && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); toggleTurn(h); }
    });
    var search = document.getElementById("search"), timer = null;
    function runSearch() {
      var q = search.value.trim().toLowerCase();
      if (q === query) return;
      query = q;
      status.textContent = "searching…";
      rebuild();
    }
    search.addEventListener("keydown", function (ev) { if (ev.key === "Enter") { clearTimeout(timer); runSearch(); } });
    search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(runSearch, 400); });
    document.querySelectorAll("input.kind").forEach(function (b) { b.addEventListener("change", rebuild); });
    function setAll(open) {
      unfold = open;
      document.querySelectorAll("details.rec").forEach(function (d) { d.open = open; });
    }
    document.getElementById("expand").addEventListener("click", function () { setAll(true); });
    document.getElementById("collapse").addEventListener("click", function () { setAll(false); });
    new IntersectionObserver(function (entries) {
      if (entries.some(function (e) { return e.isIntersecting; })) { renderMore(WINDOW); fill(); }
    }, { rootMargin: "800px" }).observe(sentinel);
    if (meta.eager) adopt(); else renderMore(WINDOW);
    whenLoaded(showStatus);
    document.body.dataset.ready = Math.round(performance.now());
  }
  window.trajconvStart = start;
  if (main.count === 0) whenLoaded(start); // no data block calls it
})();
