// Layout check run inside the report page (tests/report/test_browser.py injects it).
// After load it opens every <details>, then records on <body data-layout="..."> a JSON list of
// problems found with bounding boxes and scroll sizes:
//   page-scroll   the page itself is wider than the window (a horizontal page scroll bar)
//   overflow      an element's content is wider than its box and the box does not scroll
//                 (scrollWidth > clientWidth with overflow-x hidden/clip/visible)
//   outside       an element's box reaches outside its parent's box (a card over its neighbour)
//   squeezed      a table header cell (row or column name) wrapped over more than 3 lines
//   overlap       two pieces of text are drawn over each other
// Boxes meant to scroll (overflow-x auto or scroll: .scroll, pre) may be wider inside: their
// own box must fit, and their content is checked only where it is visible.
(function () {
  var TOLERANCE = 1.5;  // px: sub-pixel rounding of borders and table cells
  var MAX_LINES = 3;    // a header cell wrapped further was squeezed by its wide neighbours

  function scrolls(el) {
    var ox = getComputedStyle(el).overflowX;
    return ox === "auto" || ox === "scroll";
  }
  function describe(el) {
    var name = el.tagName.toLowerCase();
    if (el.id) name += "#" + el.id;
    if (el.className && typeof el.className === "string") name += "." + el.className.trim().split(/\s+/).join(".");
    var text = (el.textContent || "").trim().replace(/\s+/g, " ").slice(0, 60);
    var section = el.closest("section");
    return name + (section ? " in #" + section.id : "") + (text ? " «" + text + "»" : "");
  }
  function scrollAncestor(el) {
    for (var p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (scrolls(p)) return p;
    }
    return null;
  }
  function visible(rect) { return rect.width > 0 && rect.height > 0; }
  function clip(rect, box) {  // rect cut to box (both {left, top, right, bottom}); null if empty
    var r = { left: Math.max(rect.left, box.left), top: Math.max(rect.top, box.top),
              right: Math.min(rect.right, box.right), bottom: Math.min(rect.bottom, box.bottom) };
    return r.right - r.left > 0 && r.bottom - r.top > 0 ? r : null;
  }

  function check() {
    var details = document.querySelectorAll("details");
    for (var d = 0; d < details.length; d++) details[d].open = true;
    var problems = [];
    var root = document.documentElement;
    if (root.scrollWidth > window.innerWidth + TOLERANCE) {
      problems.push({ kind: "page-scroll", what: "page", by: root.scrollWidth - window.innerWidth });
    }
    var all = document.body.querySelectorAll("*");
    for (var i = 0; i < all.length; i++) {
      var el = all[i];
      var style = getComputedStyle(el);
      if (style.display === "inline" || style.display === "none" || el.tagName === "SCRIPT") continue;
      var rect = el.getBoundingClientRect();
      if (!visible(rect)) continue;
      var inScroll = scrollAncestor(el) !== null;
      // clipped: content wider than the box, in a box that does not scroll
      if (!scrolls(el) && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + TOLERANCE && !inScroll) {
        problems.push({ kind: "overflow", what: describe(el), by: el.scrollWidth - el.clientWidth });
      }
      // outside: the box leaves its parent's box (content of a scrolling box may: it scrolls)
      var parent = el.parentElement;
      if (parent && parent !== document.body && !inScroll && style.position !== "fixed") {
        var pr = parent.getBoundingClientRect();
        var over = Math.max(pr.left - rect.left, rect.right - pr.right);
        if (visible(pr) && over > TOLERANCE) {
          problems.push({ kind: "outside", what: describe(el), parent: describe(parent), by: over });
        }
      }
    }
    // squeezed: a header cell (a row or column name) broken over more than MAX_LINES lines
    var heads = document.body.querySelectorAll("th");
    for (var t = 0; t < heads.length; t++) {
      var range0 = document.createRange();
      range0.selectNodeContents(heads[t]);
      var tops = {};
      var lineRects = range0.getClientRects();
      for (var q = 0; q < lineRects.length; q++) if (lineRects[q].width > 0) tops[Math.round(lineRects[q].top)] = true;
      var lines = Object.keys(tops).length;
      if (lines > MAX_LINES) problems.push({ kind: "squeezed", what: describe(heads[t]), by: lines });
    }
    // overlap: every line box of every text node against the others (clipped to its scroll box)
    var boxes = [];
    var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    var node, id = 0;
    while ((node = walker.nextNode())) {
      if (!node.textContent.trim() || !node.parentElement || node.parentElement.closest("script,style")) continue;
      var range = document.createRange();
      range.selectNodeContents(node);
      var box = scrolls(node.parentElement) ? node.parentElement : scrollAncestor(node.parentElement);
      var limit = box ? box.getBoundingClientRect() : null;
      var rects = range.getClientRects();
      id += 1;
      for (var r = 0; r < rects.length; r++) {
        var cut = limit ? clip(rects[r], limit) : { left: rects[r].left, top: rects[r].top, right: rects[r].right, bottom: rects[r].bottom };
        if (cut && cut.right - cut.left > 0.5) boxes.push({ id: id, r: cut, el: node.parentElement });
      }
    }
    boxes.sort(function (a, b) { return a.r.top - b.r.top; });
    var overlaps = 0;
    for (var a = 0; a < boxes.length; a++) {
      for (var b = a + 1; b < boxes.length && boxes[b].r.top < boxes[a].r.bottom; b++) {
        if (boxes[a].id === boxes[b].id) continue;
        var w = Math.min(boxes[a].r.right, boxes[b].r.right) - Math.max(boxes[a].r.left, boxes[b].r.left);
        var h = Math.min(boxes[a].r.bottom, boxes[b].r.bottom) - Math.max(boxes[a].r.top, boxes[b].r.top);
        // line boxes of adjacent lines touch by a pixel or two; drawn-over text shares more
        if (w > 2 && h > 3) {
          overlaps += 1;
          if (overlaps <= 50) problems.push({ kind: "overlap", what: describe(boxes[a].el), other: describe(boxes[b].el), by: Math.min(w, h) });
        }
      }
    }
    // Boxes named with data-table: how wide their table is against the box (a table wider than
    // its box hides columns until scrolled: tests assert it fits at the widths it must fit).
    var named = document.querySelectorAll("[data-table]"), fits = {};
    for (var n = 0; n < named.length; n++) {
      fits[named[n].getAttribute("data-table")] = { scroll: named[n].scrollWidth, client: named[n].clientWidth };
    }
    // The answer block and its first card: where they are on the first screen (window height).
    var answer = document.getElementById("answer");
    if (answer) {
      var first = answer.querySelector(".ans") || answer;
      var line = answer.querySelector(".ans p.best") || answer.querySelector("p") || first;
      fits["answer-block"] = { top: answer.getBoundingClientRect().top + window.scrollY,
                               first_bottom: first.getBoundingClientRect().bottom + window.scrollY,
                               first_line_bottom: line.getBoundingClientRect().bottom + window.scrollY,
                               window: window.innerHeight };
    }
    document.body.setAttribute("data-layout-tables", JSON.stringify(fits));
    document.body.setAttribute("data-layout-checked", String(all.length));
    document.body.setAttribute("data-layout-texts", String(boxes.length));
    document.body.setAttribute("data-layout", JSON.stringify(problems.slice(0, 200)));
  }
  window.addEventListener("load", function () { try { check(); } catch (e) { document.body.setAttribute("data-layout-error", String(e)); } });
})();
