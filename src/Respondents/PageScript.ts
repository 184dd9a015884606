/**
 * The survey page's script: steps, inline validation, heatmap and ranking controls, partial
 * saves through the respondent API, and the thank-you state. Plain browser JavaScript, kept
 * as a string so that the compiled binary serves it without files.
 */
export const pageScript = String.raw`
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("survey-data").textContent);
  var token = data.respondentToken;
  var form = document.getElementById("survey-form");
  var steps = Array.prototype.slice.call(document.querySelectorAll(".step"));
  var back = document.getElementById("back");
  var next = document.getElementById("next");
  var status = document.getElementById("form-status");
  var bar = document.querySelector(".bar");
  var progressText = document.getElementById("progress-text");
  var current = 0;
  var responseId = null;
  var busy = false;
  var emailPattern = /^[a-zA-Z0-9.!#$%&'*+\/=?^_\x60{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+$/;
  var numberPattern = /^-?\d{1,30}(\.\d{1,15})?$/;

  function questionEl(q) { return document.getElementById(q.domId); }
  function questionsOfStep(i) {
    return data.questions.filter(function (q) { return q.type !== "section" && steps[i].contains(questionEl(q)); });
  }

  function valuesOf(q) {
    var el = questionEl(q);
    switch (q.type) {
      case "textarea": {
        var text = el.querySelector("textarea").value;
        return text.trim() === "" ? [] : [text];
      }
      case "email": case "number": case "calendar": {
        var v = el.querySelector("input").value.trim();
        return v === "" ? [] : [v];
      }
      case "country": {
        var c = el.querySelector("select").value;
        return c === "" ? [] : [c];
      }
      case "checkbox": case "scale":
        return Array.prototype.slice.call(el.querySelectorAll("input:checked")).map(function (i) { return i.value; });
      case "heatmap":
        return el.dataset.point ? [el.dataset.point] : [];
      case "sort":
        return el.dataset.ranked === "true"
          ? Array.prototype.slice.call(el.querySelectorAll(".sort-item")).map(function (li) { return li.dataset.value; })
          : [];
    }
    return [];
  }

  function setError(q, message) {
    var el = questionEl(q);
    var slot = document.getElementById("err-" + q.domId);
    var control = el.tagName === "FIELDSET" ? el : el.querySelector("textarea, input, select");
    if (message) {
      slot.textContent = message;
      slot.hidden = false;
      if (control) control.setAttribute("aria-invalid", "true");
    } else {
      slot.textContent = "";
      slot.hidden = true;
      if (control) control.removeAttribute("aria-invalid");
    }
  }

  function problemOf(q, values) {
    if (values.length === 0) return q.required ? "Please answer this question." : null;
    var v = values[0];
    if (q.type === "email" && !emailPattern.test(v)) return "Please enter an email address like name@example.com.";
    if (q.type === "number" && !numberPattern.test(v)) return "Please enter a number like 42 or -3.5.";
    if (q.type === "calendar" && !/^\d{4}-\d{2}-\d{2}$/.test(v)) return "Please pick a date.";
    return null;
  }

  function focusQuestion(q) {
    var el = questionEl(q);
    var target = el.querySelector("textarea, input, select, .heatmap, .sort-item button");
    if (target) target.focus();
  }

  function validateStep(i) {
    var firstBad = null;
    questionsOfStep(i).forEach(function (q) {
      var problem = problemOf(q, valuesOf(q));
      setError(q, problem);
      if (problem && !firstBad) firstBad = q;
    });
    if (firstBad) focusQuestion(firstBad);
    return firstBad === null;
  }

  function show(i) {
    steps.forEach(function (s, k) { s.hidden = k !== i; });
    current = i;
    back.hidden = i === 0;
    next.textContent = i === steps.length - 1 ? "Submit" : "Next";
    var percent = Math.round((i / steps.length) * 100);
    bar.setAttribute("aria-valuenow", String(percent));
    bar.firstElementChild.style.width = percent + "%";
    progressText.textContent = "Step " + (i + 1) + " of " + steps.length;
  }

  function showThanks() {
    form.hidden = true;
    bar.setAttribute("aria-valuenow", "100");
    bar.firstElementChild.style.width = "100%";
    progressText.textContent = "Complete";
    var thanks = document.getElementById("thanks");
    thanks.hidden = false;
    thanks.focus();
  }

  function applyIssues(issues, sent) {
    var shown = false;
    (issues || []).forEach(function (issue) {
      var m = /^answers\.(\d+)\./.exec(issue.path);
      var q = null;
      if (m && sent[Number(m[1])]) {
        var id = sent[Number(m[1])].questionId;
        q = data.questions.filter(function (x) { return x.id === id; })[0];
      }
      var r = /^questions\.(.+)$/.exec(issue.path);
      if (r) q = data.questions.filter(function (x) { return x.id === r[1]; })[0];
      if (q) {
        setError(q, issue.message.charAt(0).toUpperCase() + issue.message.slice(1) + ".");
        if (!shown) {
          for (var k = 0; k < steps.length; k++) if (steps[k].contains(questionEl(q))) show(k);
          focusQuestion(q);
          shown = true;
        }
      }
    });
  }

  function save(answers, finished) {
    var body = JSON.stringify({ answers: answers, finished: finished });
    var url = responseId === null ? "/respond/v1/responses" : "/respond/v1/responses/" + encodeURIComponent(responseId);
    return fetch(url, {
      method: responseId === null ? "POST" : "PATCH",
      headers: { "content-type": "application/json", authorization: "Bearer " + token },
      body: body
    }).then(function (res) {
      return res.json().then(function (json) {
        if (!res.ok) throw { status: res.status, body: json };
        if (json.responseId) responseId = json.responseId;
        return json;
      });
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (busy || !validateStep(current)) return;
    var last = current === steps.length - 1;
    var answers = questionsOfStep(current).map(function (q) { return { questionId: q.id, values: valuesOf(q) }; });
    var hasContent = answers.some(function (a) { return a.values.length > 0; });
    if (!last && responseId === null && !hasContent) { show(current + 1); focusStep(); return; }
    busy = true;
    next.disabled = true;
    status.className = "status";
    status.textContent = last ? "Submitting…" : "Saving…";
    save(answers, last).then(function () {
      status.textContent = last ? "" : "Saved.";
      if (last) showThanks(); else { show(current + 1); focusStep(); }
    }, function (failure) {
      status.className = "status error";
      var body = failure && failure.body;
      status.textContent = body && body.message ? body.message : "Your answers could not be saved. Please try again.";
      if (body && body.issues) applyIssues(body.issues, answers);
    }).then(function () { busy = false; next.disabled = false; });
  });

  function focusStep() {
    var heading = steps[current].querySelector("h2");
    if (heading) heading.focus();
    else if (questionsOfStep(current)[0]) focusQuestion(questionsOfStep(current)[0]);
  }

  back.addEventListener("click", function () { if (current > 0) { show(current - 1); focusStep(); } });

  // Clear a question's error as soon as it is answered.
  form.addEventListener("input", function (event) {
    var el = event.target.closest(".question");
    if (!el) return;
    var q = data.questions.filter(function (x) { return x.domId === el.id; })[0];
    if (q && el.querySelector(".error:not([hidden])") && !problemOf(q, valuesOf(q))) setError(q, null);
  });

  // Country: filter the list while typing; Enter or ArrowDown moves into the list.
  Array.prototype.slice.call(document.querySelectorAll(".country-search")).forEach(function (search) {
    var select = document.getElementById(search.getAttribute("aria-controls"));
    search.addEventListener("input", function () {
      var needle = search.value.trim().toLowerCase();
      var firstMatch = null;
      Array.prototype.slice.call(select.options).forEach(function (o) {
        if (o.value === "") return;
        var match = needle === "" || o.textContent.toLowerCase().indexOf(needle) !== -1 || o.value.toLowerCase() === needle;
        o.hidden = !match;
        if (match && !firstMatch) firstMatch = o;
      });
      if (needle !== "" && firstMatch && (select.selectedIndex <= 0 || select.options[select.selectedIndex].hidden)) {
        select.value = firstMatch.value;
      }
    });
    search.addEventListener("keydown", function (event) {
      if (event.key === "ArrowDown" || event.key === "Enter") { event.preventDefault(); select.focus(); }
    });
  });

  // Heatmap: click to place a point; Enter places one in the middle; arrow keys move it.
  function round4(n) { return Math.round(Math.min(1, Math.max(0, n)) * 10000) / 10000; }
  function placePoint(el, x, y) {
    x = round4(x); y = round4(y);
    el.dataset.point = x + "," + y;
    var marker = el.querySelector(".marker");
    marker.hidden = false;
    marker.style.left = (x * 100) + "%";
    marker.style.top = (y * 100) + "%";
    el.querySelector("[id$=-point]").textContent = "Point placed at " + Math.round(x * 100) + "% across, " + Math.round(y * 100) + "% down.";
    var q = data.questions.filter(function (d) { return d.domId === el.id; })[0];
    if (q) setError(q, null);
  }
  Array.prototype.slice.call(document.querySelectorAll(".question[data-type=heatmap]")).forEach(function (el) {
    var area = el.querySelector(".heatmap");
    area.addEventListener("click", function (event) {
      if (event.detail === 0) return; // keyboard activation is handled by keydown
      var box = area.getBoundingClientRect();
      placePoint(el, (event.clientX - box.left) / box.width, (event.clientY - box.top) / box.height);
    });
    area.addEventListener("keydown", function (event) {
      var point = el.dataset.point ? el.dataset.point.split(",").map(Number) : null;
      var step = event.shiftKey ? 0.01 : 0.05;
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        if (!point) placePoint(el, 0.5, 0.5);
        return;
      }
      var moves = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
      var move = moves[event.key];
      if (!move) return;
      event.preventDefault();
      if (!point) point = [0.5, 0.5];
      placePoint(el, point[0] + move[0], point[1] + move[1]);
    });
    el.querySelector("[data-action=clear-point]").addEventListener("click", function () {
      delete el.dataset.point;
      el.querySelector(".marker").hidden = true;
      el.querySelector("[id$=-point]").textContent = "No point placed.";
    });
  });

  // Ranking: drag an item by pointer, or move it with its buttons (or Alt+Arrow keys).
  function markRanked(el, ranked) {
    el.dataset.ranked = ranked ? "true" : "false";
    var items = Array.prototype.slice.call(el.querySelectorAll(".sort-item"));
    items.forEach(function (li, i) { li.querySelector(".rank").textContent = ranked ? (i + 1) + "." : ""; });
    el.querySelector("[id$=-state]").textContent = ranked
      ? "Your order: " + items.map(function (li) { return li.querySelector(".name").textContent; }).join(", ") + "."
      : "Not ranked yet.";
    var q = data.questions.filter(function (d) { return d.domId === el.id; })[0];
    if (q && ranked) setError(q, null);
  }
  Array.prototype.slice.call(document.querySelectorAll(".question[data-type=sort]")).forEach(function (el) {
    var list = el.querySelector(".sort-list");
    function move(li, delta) {
      if (delta < 0 && li.previousElementSibling) list.insertBefore(li, li.previousElementSibling);
      else if (delta > 0 && li.nextElementSibling) list.insertBefore(li.nextElementSibling, li);
      markRanked(el, true);
    }
    list.addEventListener("click", function (event) {
      var button = event.target.closest("button[data-move]");
      if (!button) return;
      var li = button.closest(".sort-item");
      move(li, Number(button.dataset.move));
      var again = li.querySelector("button[data-move='" + button.dataset.move + "']");
      again.focus();
    });
    list.addEventListener("keydown", function (event) {
      if (!event.altKey || (event.key !== "ArrowUp" && event.key !== "ArrowDown")) return;
      var li = event.target.closest(".sort-item");
      if (!li) return;
      event.preventDefault();
      move(li, event.key === "ArrowUp" ? -1 : 1);
      event.target.focus();
    });
    var dragging = null;
    list.addEventListener("pointerdown", function (event) {
      if (!event.target.closest(".handle, .name, .rank")) return;
      dragging = event.target.closest(".sort-item");
      if (!dragging) return;
      event.preventDefault();
      dragging.classList.add("dragging");
      if (list.setPointerCapture) { try { list.setPointerCapture(event.pointerId); } catch (e) { /* capture is optional */ } }
    });
    list.addEventListener("pointermove", function (event) {
      if (!dragging) return;
      var items = Array.prototype.slice.call(list.querySelectorAll(".sort-item"));
      var before = null;
      for (var i = 0; i < items.length; i++) {
        if (items[i] === dragging) continue;
        var box = items[i].getBoundingClientRect();
        if (event.clientY < box.top + box.height / 2) { before = items[i]; break; }
      }
      if (before !== dragging.nextElementSibling || (before === null && list.lastElementChild !== dragging)) {
        list.insertBefore(dragging, before);
      }
    });
    function endDrag() {
      if (!dragging) return;
      dragging.classList.remove("dragging");
      dragging = null;
      markRanked(el, true);
    }
    list.addEventListener("pointerup", endDrag);
    list.addEventListener("pointercancel", endDrag);
    el.querySelector("[data-action=keep-order]").addEventListener("click", function () { markRanked(el, true); });
    el.querySelector("[data-action=clear-order]").addEventListener("click", function () { markRanked(el, false); });
  });

  show(0);
})();
`
