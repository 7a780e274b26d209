// svc dashboard: theme, charts, live events, countdowns, copy buttons, Cytoscape graphs.
// Loaded in <head> without defer (the theme applies before the first paint); the rest waits
// for the document.
(function () {
  "use strict";
  var saved = null;
  try { saved = localStorage.getItem("svc-theme"); } catch (e) { /* private mode */ }
  if (saved === "dark" || saved === "light") document.documentElement.dataset.theme = saved;

  function effectiveTheme() {
    var t = document.documentElement.dataset.theme;
    if (t) return t;
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }

  function json(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  function csrf() {
    try { return JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRF-Token"]; } catch (e) { return ""; }
  }

  // Home's charts, drawn again in the new colours when the theme changes.
  function charts() {
    var data = json("chart-data");
    if (!data || !window.Chart) return;
    ["chart-activity", "chart-pipeline", "chart-credits"].forEach(function (id) {
      var old = Chart.getChart(id);
      if (old) old.destroy();
    });
    var css = getComputedStyle(document.documentElement);
    var accent = css.getPropertyValue("--accent").trim() || "#2454c7";
    var muted = css.getPropertyValue("--muted").trim() || "#888";
    var grid = css.getPropertyValue("--line").trim() || "rgba(128,128,128,0.3)";
    Chart.defaults.color = muted;
    Chart.defaults.borderColor = grid;
    var money = new Intl.NumberFormat(undefined, { style: "currency", currency: data.currency || "USD", maximumFractionDigits: 0 });
    var short = new Intl.NumberFormat(undefined, { style: "currency", currency: data.currency || "USD", notation: "compact", maximumFractionDigits: 1 });
    var hours = data.activity.map(function (_, i) { return (i - data.activity.length + 1) + "h"; });
    new Chart(document.getElementById("chart-activity"), {
      type: "line",
      data: { labels: hours, datasets: [{ label: "signals", data: data.activity, borderColor: accent, backgroundColor: accent, tension: 0.3 }] },
      options: { animation: false, plugins: { legend: { display: false } }, scales: { y: { beginAtZero: true, ticks: { precision: 0 } } } }
    });
    new Chart(document.getElementById("chart-pipeline"), {
      type: "bar",
      data: { labels: data.stages, datasets: [{ label: "open amount", data: data.stage_amounts, backgroundColor: accent }] },
      options: {
        animation: false,
        plugins: {
          legend: { display: false },
          tooltip: { callbacks: { label: function (c) {
            var n = data.stage_counts[c.dataIndex];
            return money.format(c.parsed.y) + " · " + n + (n === 1 ? " opportunity" : " opportunities");
          } } }
        },
        scales: { y: { beginAtZero: true, ticks: { callback: function (v) { return short.format(v); } } } }
      }
    });
    new Chart(document.getElementById("chart-credits"), {
      type: "doughnut",
      data: { labels: ["used", "left"], datasets: [{ data: [data.credits_used, data.credits_left], backgroundColor: [accent, muted], borderColor: css.getPropertyValue("--card").trim() || "#fff" }] },
      options: { animation: false }
    });
  }

  // <time data-relative>: the text says how long ago, kept current; the title has the time.
  function relativeTimes() {
    var fmt = window.Intl && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat(undefined, { numeric: "auto" }) : null;
    function tick() {
      if (!fmt) return;
      document.querySelectorAll("time[data-relative]").forEach(function (el) {
        var at = Date.parse(el.getAttribute("datetime"));
        if (isNaN(at)) return;
        var s = Math.round((at - Date.now()) / 1000), a = Math.abs(s);
        var text;
        if (a < 45) text = "just now";
        else if (a < 3600) text = fmt.format(Math.round(s / 60), "minute");
        else if (a < 86400) text = fmt.format(Math.trunc(s / 3600), "hour");
        else if (a < 86400 * 60) text = fmt.format(Math.trunc(s / 86400), "day");
        else return;
        el.textContent = text;
      });
    }
    tick();
    setInterval(tick, 30000);
  }

  function liveFeed() {
    var feed = document.getElementById("live-feed");
    if (!feed) return;
    var state = document.getElementById("live-state");
    var ticket = feed.dataset.ticket;
    var delay = 1000;
    function say(text) { if (state) state.textContent = text; }
    function open(t) {
      var proto = location.protocol === "https:" ? "wss://" : "ws://";
      var ws = new WebSocket(proto + location.host + "/v1/stream?ticket=" + encodeURIComponent(t));
      ws.onopen = function () { delay = 1000; say("live"); feed.dataset.connected = "true"; };
      ws.onmessage = function (m) {
        var ev;
        try { ev = JSON.parse(m.data); } catch (e) { return; }
        var empty = feed.querySelector(".empty");
        if (empty) empty.remove();
        var li = document.createElement("li");
        li.className = "new event";
        var time = document.createElement("time");
        time.textContent = ev.ts ? new Date(ev.ts).toLocaleString() : "";
        var name = document.createElement("strong");
        name.textContent = ev.event || ev.type;
        var who = document.createElement("a");
        who.href = "/app/customers/" + encodeURIComponent(ev.customer_id);
        who.textContent = ev.customer_id;
        time.setAttribute("datetime", ev.ts || "");
        time.dataset.relative = "";
        time.title = ev.ts || "";
        li.append(time, " ", name, " · ", who);
        personName(ev.customer_id, who);
        feed.prepend(li);
        var activity = window.Chart && Chart.getChart("chart-activity");
        if (activity) {
          var series = activity.data.datasets[0].data;
          series[series.length - 1] += 1;
          activity.update();
        }
        var fig = document.getElementById("fig-signals");
        if (fig && /^[\d,]+$/.test(fig.textContent)) fig.textContent = (Number(fig.textContent.replace(/,/g, "")) + 1).toLocaleString("en-US");
      };
      ws.onclose = function () {
        feed.dataset.connected = "false";
        say("reconnecting…");
        setTimeout(reconnect, delay);
        delay = Math.min(delay * 2, 30000);
      };
    }
    function reconnect() {
      fetch("/app/stream-ticket", { method: "POST", headers: { "X-CSRF-Token": csrf() }, credentials: "same-origin" })
        .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
        .then(function (b) { open(b.ticket); })
        .catch(function () { say("offline"); setTimeout(reconnect, delay); delay = Math.min(delay * 2, 30000); });
    }
    open(ticket);
  }

  // The live feed names people: name (or email) first, the id after it in a hint.
  var people = {};
  function personName(id, link) {
    if (!id) return;
    // A page open all day meets many people: keep the last few hundred lookups.
    if (!people[id] && Object.keys(people).length >= 500) people = {};
    if (!people[id]) {
      people[id] = fetch("/app/home/who?id=" + encodeURIComponent(id), { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .catch(function () { return null; });
    }
    people[id].then(function (p) {
      if (!p || !(p.name || p.email)) return;
      link.textContent = p.name || p.email;
      var hint = document.createElement("span");
      hint.className = "hint";
      hint.textContent = " " + (p.name && p.email ? "<" + p.email + ">" : id);
      link.after(hint);
      link.closest("li").dataset.named = "true";
    });
  }

  function countdowns() {
    function tick() {
      document.querySelectorAll("time.countdown").forEach(function (el) {
        var left = Math.round((Date.parse(el.dataset.expires) - Date.now()) / 1000);
        if (isNaN(left)) return;
        if (left <= 0) { el.textContent = "expired"; return; }
        var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
        el.textContent = (h ? h + "h " : "") + (h || m ? m + "m " : "") + s + "s";
      });
    }
    tick();
    setInterval(tick, 1000);
  }

  // Colours for node labels, told apart in light and dark themes.
  var PALETTE = ["#2454c7", "#c2410c", "#15803d", "#9333ea", "#b45309", "#0e7490", "#be123c", "#4d7c0f", "#6d28d9", "#0f766e"];

  // The result's graph, drawn when its panel is first shown (Cytoscape needs a visible box).
  var drawn = null;
  function graph() {
    var data = json("graph-data");
    var el = document.getElementById("graph");
    if (!data || !el || !window.cytoscape) return null;
    if (drawn && drawn.container() === el) { drawn.resize(); drawn.fit(undefined, 20); return drawn; }
    var css = getComputedStyle(document.documentElement);
    var fg = css.getPropertyValue("--fg").trim(), bg = css.getPropertyValue("--bg").trim();
    var kinds = [];
    function learn(items) { items.forEach(function (d) { var k = d.data.kind; if (!d.data.source && k && kinds.indexOf(k) < 0) kinds.push(k); }); }
    learn(data);
    var colour = function (k) { var i = kinds.indexOf(k); return i < 0 ? "#888" : PALETTE[i % PALETTE.length]; };
    var degree = {};
    data.forEach(function (d) { if (d.data.source) { degree[d.data.source] = (degree[d.data.source] || 0) + 1; degree[d.data.target] = (degree[d.data.target] || 0) + 1; } });
    // The centre: the node the page names (data-centre), else the best connected one.
    var centre = el.dataset.centre || null;
    if (!centre) { var best = -1; Object.keys(degree).forEach(function (id) { if (degree[id] > best) { best = degree[id]; centre = id; } }); }
    var cy = cytoscape({
      container: el,
      elements: data,
      layout: { name: "cose", animate: false, nodeRepulsion: 9000, idealEdgeLength: 90 },
      style: [
        { selector: "node", style: { label: "data(label)", "background-color": function (n) { return colour(n.data("kind")); }, color: fg, "font-size": 10, "text-valign": "bottom", "text-margin-y": 4, "text-max-width": 110, "text-wrap": "ellipsis", "text-background-color": bg, "text-background-opacity": 0.8, "text-background-padding": 1 } },
        { selector: "node.centre", style: { width: 42, height: 42, "border-width": 4, "border-color": fg, "font-weight": "bold" } },
        { selector: "node.expanded", style: { "border-width": 2, "border-style": "double", "border-color": fg } },
        { selector: "edge", style: { label: "data(label)", "curve-style": "bezier", "target-arrow-shape": "triangle", "font-size": 8, color: fg, width: 1.5, "text-rotation": "autorotate", "text-background-color": bg, "text-background-opacity": 0.8 } }
      ]
    });
    if (centre) cy.getElementById(centre).addClass("centre");
    var legend = document.getElementById("graph-legend");
    function drawLegend() {
      if (!legend) return;
      legend.textContent = "";
      kinds.forEach(function (k) {
        var li = document.createElement("li"), sw = document.createElement("span");
        sw.className = "swatch";
        sw.style.background = colour(k);
        li.append(sw, k);
        legend.append(li);
      });
    }
    drawLegend();
    // A click grows the graph in place: the node's neighbourhood is fetched and merged.
    cy.on("tap", "node", function (e) { expand(cy, e.target, learn, drawLegend); });
    drawn = cy;
    return cy;
  }

  function expand(cy, node, learn, drawLegend) {
    var el = cy.container();
    if (node.hasClass("expanded") || el.dataset.busy === "true") return;
    el.dataset.busy = "true";
    var engineId = node.id().slice(1);
    fetch("/app/graph/neighbourhood?node=" + encodeURIComponent(engineId), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.json().then(function (b) { if (!r.ok) throw new Error(b.error || r.status); return b; }); })
      .then(function (b) {
        var fresh = b.elements.filter(function (d) { return cy.getElementById(d.data.id).empty(); });
        // New nodes start at the clicked one, so the layout grows the graph from there.
        var at = node.position();
        fresh.forEach(function (d) { if (!d.data.source) d.position = { x: at.x + (Math.random() - 0.5) * 40, y: at.y + (Math.random() - 0.5) * 40 }; });
        learn(fresh);
        cy.add(fresh.filter(function (d) { return !d.data.source; }));
        cy.add(fresh.filter(function (d) { return d.data.source && !cy.getElementById(d.data.source).empty() && !cy.getElementById(d.data.target).empty(); }));
        node.addClass("expanded");
        cy.layout({ name: "cose", animate: false, randomize: false, nodeRepulsion: 9000, idealEdgeLength: 90 }).run();
        drawLegend();
        el.dataset.expanded = String(cy.nodes(".expanded").length);
        el.setAttribute("aria-label", "Graph of " + cy.elements().length + " elements");
      })
      .catch(function (err) {
        var toast = document.getElementById("toast");
        if (toast) { toast.textContent = "Could not load the neighbourhood: " + err.message; toast.hidden = false; setTimeout(function () { toast.hidden = true; }, 8000); }
      })
      .then(function () { el.dataset.busy = "false"; });
  }

  // The result's table / graph tabs: the panel not chosen is hidden; arrow keys move between tabs.
  function resultTabs() {
    var list = document.getElementById("result-tabs");
    if (!list) { if (document.getElementById("graph")) graph(); return; }
    var tabs = [].slice.call(list.querySelectorAll("[role=tab]"));
    function select(name, focus) {
      list.dataset.selected = name;
      tabs.forEach(function (t) {
        var on = t.id === "tab-" + name;
        t.setAttribute("aria-selected", on ? "true" : "false");
        t.tabIndex = on ? 0 : -1;
        document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
        if (on && focus) t.focus();
      });
      if (name === "graph") graph();
      // The address keeps the chosen view, so a reload or a shared link opens on it.
      var url = new URL(location.href);
      if (url.searchParams.has("q") || url.searchParams.has("explore")) {
        url.searchParams.set("view", name);
        history.replaceState(history.state, "", url.pathname + url.search + url.hash);
      }
    }
    tabs.forEach(function (t, i) {
      t.addEventListener("click", function () { select(t.id.slice(4), false); });
      t.addEventListener("keydown", function (e) {
        if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
        var next = tabs[(i + (e.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
        select(next.id.slice(4), true);
      });
    });
    list.hidden = false;
    var asked = new URL(location.href).searchParams.get("view");
    select(asked === "table" || asked === "graph" ? asked : (list.dataset.selected || "table"), false);
  }

  // The console's schema: a click puts the snippet in the query box (the link runs it
  // without JavaScript).
  function schemaSnippets() {
    document.addEventListener("click", function (e) {
      var a = e.target.closest && e.target.closest("a.snippet[data-snippet]");
      var q = document.getElementById("query");
      if (!a || !q || e.ctrlKey || e.metaKey || e.shiftKey) return;
      e.preventDefault();
      q.value = a.dataset.snippet;
      q.focus();
      q.setSelectionRange(q.value.length, q.value.length);
    });
  }

  // The console: Ctrl+Enter runs; earlier queries are kept in this browser (localStorage).
  function consoleHistory() {
    var q = document.getElementById("query"), pick = document.getElementById("query-history");
    if (!q || !pick) return;
    var key = "svc-cypher-history", list = [];
    try { list = JSON.parse(localStorage.getItem(key) || "[]"); } catch (e) { list = []; }
    function fill() {
      while (pick.options.length > 1) pick.remove(1);
      list.forEach(function (text) { var o = document.createElement("option"); o.value = text; o.textContent = text.length > 80 ? text.slice(0, 79) + "…" : text; pick.append(o); });
    }
    fill();
    pick.addEventListener("change", function () { if (pick.value) q.value = pick.value; q.focus(); });
    q.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); q.form.requestSubmit(); }
    });
    q.form.addEventListener("submit", function () {
      var text = q.value.trim();
      if (!text) return;
      list = [text].concat(list.filter(function (t) { return t !== text; })).slice(0, 20);
      try { localStorage.setItem(key, JSON.stringify(list)); } catch (e) { /* private mode */ }
      fill();
    });
  }

  document.addEventListener("click", function (e) {
    var t = e.target;
    if (t.id === "theme-toggle") {
      var next = effectiveTheme() === "dark" ? "light" : "dark";
      document.documentElement.dataset.theme = next;
      try { localStorage.setItem("svc-theme", next); } catch (err) { /* ignore */ }
      charts();
    }
    if (t.dataset && t.dataset.copy) {
      var input = document.getElementById(t.dataset.copy);
      input.select();
      var done = function () { t.textContent = "Copied"; };
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(input.value).then(done, function () { document.execCommand("copy"); done(); });
      else { document.execCommand("copy"); done(); }
    }
  });

  // Chat: the turn's server-sent events, read from the POST response as they arrive.
  function chat() {
    var form = document.getElementById("chat-form");
    if (!form) return;
    var log = document.getElementById("chat-log");
    function bubble(cls, text) {
      var li = document.createElement("li");
      li.className = cls;
      var meta = document.createElement("span");
      meta.className = "meta";
      var body = document.createElement("span");
      body.className = "text";
      body.textContent = text || "";
      li.append(meta, body);
      log.append(li);
      return li;
    }
    // Enter sends; Shift+Enter is a new line.
    form.elements.message.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
    });
    // Customer ids (and API paths to them) in an answer become links to their pages.
    function linkify(el) {
      var text = el.textContent;
      var re = /(?:\/api)?(?:\/v1\/customers\/)?(cus_[A-Za-z0-9_-]+)/g, last = 0, m, out = document.createDocumentFragment();
      while ((m = re.exec(text))) {
        out.append(text.slice(last, m.index));
        var a = document.createElement("a");
        a.href = "/app/customers/" + encodeURIComponent(m[1]);
        a.textContent = m[1];
        out.append(a);
        last = re.lastIndex;
      }
      out.append(text.slice(last));
      el.textContent = "";
      el.append(out);
    }
    log.scrollTop = log.scrollHeight;
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var data = new URLSearchParams(new FormData(form));
      var text = form.elements.message.value;
      if (!text.trim()) return;
      bubble("you", text).querySelector(".meta").textContent = "You";
      var answer = bubble("buddy", "");
      answer.dataset.state = "streaming";
      var meta = answer.querySelector(".meta"), body = answer.querySelector(".text");
      meta.textContent = "…";
      form.elements.message.value = "";
      var button = form.querySelector("button[type=submit]");
      button.disabled = true;
      function handle(name, payload) {
        var d = null;
        try { d = JSON.parse(payload); } catch (err) { return; }
        if (name === "turn.started" && d.session_id) {
          document.getElementById("chat-session").value = d.session_id;
          // A reload resumes this conversation.
          history.replaceState(null, "", "/app/chat?session=" + encodeURIComponent(d.session_id));
        }
        if (name === "route") meta.textContent = (d.buddy_id || d.buddy || "orchestrator") + (d.reason ? " — " + d.reason : "");
        if (name === "tool_call") meta.textContent += " · " + (d.capability || "tool");
        if (name === "message.delta") body.textContent += d.text || "";
        if (name === "turn.completed") {
          if (!body.textContent) body.textContent = d.message || "";
          linkify(body);
          answer.dataset.state = d.status || "completed";
        }
      }
      fetch("/app/chat", { method: "POST", body: data, credentials: "same-origin" }).then(function (r) {
        if (!r.ok || !r.body) return r.text().then(function (t) { answer.dataset.state = "failed"; body.innerHTML = t; });
        var reader = r.body.getReader(), decoder = new TextDecoder(), buffer = "";
        function pump() {
          return reader.read().then(function (chunk) {
            if (chunk.done) return;
            buffer += decoder.decode(chunk.value, { stream: true });
            var frames = buffer.split("\n\n");
            buffer = frames.pop();
            frames.forEach(function (frame) {
              var name = "message", lines = [];
              frame.split("\n").forEach(function (line) {
                if (line.indexOf("event:") === 0) name = line.slice(6).trim();
                else if (line.indexOf("data:") === 0) lines.push(line.slice(5).replace(/^ /, ""));
              });
              if (lines.length) handle(name, lines.join("\n"));
            });
            return pump();
          });
        }
        return pump();
      }).catch(function () { answer.dataset.state = "failed"; }).then(function () { button.disabled = false; });
    });
  }

  // Any form (or its submit button) with data-confirm asks before it is sent: revoking a key,
  // bulk decisions. Capture phase, so it runs before htmx or other submit handlers.
  function confirmDialogs() {
    document.addEventListener("submit", function (e) {
      var form = e.target;
      var ask = (e.submitter && e.submitter.dataset && e.submitter.dataset.confirm) || (form.dataset && form.dataset.confirm);
      if (ask && !window.confirm(ask)) { e.preventDefault(); e.stopImmediatePropagation(); }
    }, true);
  }

  // Range inputs show their value next to their label.
  document.addEventListener("input", function (e) {
    var t = e.target;
    if (t.dataset && t.dataset.output) {
      var out = document.getElementById(t.dataset.output);
      if (out) out.textContent = t.value;
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    charts();
    liveFeed();
    countdowns();
    relativeTimes();
    confirmDialogs();
    consoleHistory();
    resultTabs();
    schemaSnippets();
    chat();
  });
  document.addEventListener("htmx:afterSettle", function () { drawn = null; resultTabs(); });
  // htmx swaps nothing on an error answer: show the page's message instead.
  document.addEventListener("htmx:responseError", function (e) {
    var toast = document.getElementById("toast");
    if (!toast) return;
    var text = "The request failed (" + e.detail.xhr.status + ").";
    try {
      var doc = new DOMParser().parseFromString(e.detail.xhr.responseText, "text/html");
      var alert = doc.querySelector("main .alert") || doc.querySelector(".alert");
      if (alert) text = alert.textContent;
    } catch (err) { /* keep the generic text */ }
    toast.textContent = text;
    toast.hidden = false;
    setTimeout(function () { toast.hidden = true; }, 8000);
  });

  // Approvals: a group's "select all" box checks that group's pending actions (issue 28).
  function selectGroup(e) {
    var box = e.target;
    if (!box || !box.dataset || !box.dataset.selectGroup) return;
    var group = box.dataset.selectGroup;
    document.querySelectorAll("input.select[data-group]").forEach(function (c) {
      if (c.dataset.group === group) c.checked = box.checked;
    });
  }
  document.addEventListener("change", selectGroup);
})();
