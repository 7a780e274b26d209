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
        time.textContent = ev.ts || "";
        var name = document.createElement("strong");
        name.textContent = ev.event || ev.type;
        var who = document.createElement("a");
        who.href = "/app/customers/" + encodeURIComponent(ev.customer_id);
        who.textContent = ev.customer_id;
        li.append(time, " ", name, " · ", who);
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

  function graph(root) {
    var data = json("graph-data");
    var el = (root || document).querySelector ? document.getElementById("graph") : null;
    if (!data || !el || !window.cytoscape) return;
    var css = getComputedStyle(document.documentElement);
    var fg = css.getPropertyValue("--fg").trim(), accent = css.getPropertyValue("--accent").trim();
    cytoscape({
      container: el,
      elements: data,
      layout: { name: "cose", animate: false },
      style: [
        { selector: "node", style: { label: "data(label)", "background-color": accent, color: fg, "font-size": 10 } },
        { selector: "edge", style: { label: "data(label)", "curve-style": "bezier", "target-arrow-shape": "triangle", "font-size": 8, color: fg, width: 1.5 } }
      ]
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
        if (name === "turn.started" && d.session_id) document.getElementById("chat-session").value = d.session_id;
        if (name === "route") meta.textContent = (d.buddy_id || d.buddy || "orchestrator") + (d.reason ? " — " + d.reason : "");
        if (name === "tool_call") meta.textContent += " · " + (d.capability || "tool");
        if (name === "message.delta") body.textContent += d.text || "";
        if (name === "turn.completed") {
          if (!body.textContent) body.textContent = d.message || "";
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
    graph();
    chat();
  });
  document.addEventListener("htmx:afterSettle", function () { graph(); });
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
})();
