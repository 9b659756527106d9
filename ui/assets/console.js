// The console: a project owner's view of the public API, driven by an API
// key pasted into the page. The key lives in sessionStorage, so it is gone
// when the tab closes and is never sent anywhere but this server's API, in
// the Authorization header.
//
// Every text that comes from the server (names, answers, errors) goes into
// the page with textContent, never as HTML.
(function () {
  'use strict';

  var KEY_STORAGE = 'docsift.apiKey';
  var OWNER_STORAGE = 'docsift.owner';
  var REFRESH_MS = 1500;
  var SNIPPET_CHARS = 320;
  var SUBPAGE_VARIENCE = 1;

  function $(id) { return document.getElementById(id); }

  var errorBox = $('console-error');
  var signin = $('signin');
  var workspace = $('workspace');
  var whoami = $('whoami');
  var ownerSelect = $('owner');
  var ownerFind = $('owner-find');
  var docsBody = $('documents');
  var docsEmpty = $('documents-empty');
  var moreDocs = $('more-documents');
  var uploadStatus = $('upload-status');

  var project = null;
  var refreshTimer = null;

  // The documents come a page at a time, newest first (GET /documents).
  // A refresh asks again for as many as the table shows, up to the most
  // one page holds; Show more appends the page after them.
  var PAGE = 100;
  var MAX_PAGE = 1000;
  var shown = PAGE;
  var nextCursor = null;
  // A project's customers can be tens of thousands: the owner list shows
  // the first OWNERS_LISTED of them (a page of GET /customers), and from
  // FIND_FROM customers a find box narrows it to those whose name or id
  // holds what is typed: among the first page when it holds them all,
  // else by asking the API (GET /customers?find=), FIND_DELAY_MS after
  // the typing stops.
  var OWNERS_LISTED = 500;
  var FIND_FROM = 10;
  var FIND_DELAY_MS = 200;
  var firstPage = { customers: [], more: false };
  var listed = firstPage; // the page the owner list shows, with its find
  var chosen = null; // the chosen customer: listed whatever the find
  var findTimer = null;
  var finds = 0; // finds asked for: an answer to an older one is dropped

  // Talking to the API

  function ApiError(status, message) {
    this.status = status;
    this.message = message;
  }

  function api(method, path, body) {
    var headers = { Authorization: 'Bearer ' + sessionStorage.getItem(KEY_STORAGE) };
    var payload = body;
    if (body && !(body instanceof FormData)) {
      headers['Content-Type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    return fetch(path, { method: method, headers: headers, body: payload, cache: 'no-store', credentials: 'omit' })
      .catch(function () {
        // fetch says only "Failed to fetch": the server is down or unreachable.
        throw new ApiError(0, 'The server could not be reached: check that docsift is running, then try again.');
      })
      .then(function (resp) {
        return resp.text().then(function (text) {
          var data = null;
          try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
          if (!resp.ok) {
            var msg = (data && data.error) || ('HTTP ' + resp.status);
            if (resp.status === 401) { signOut(msg); }
            throw new ApiError(resp.status, msg);
          }
          return data;
        });
      });
  }

  // showError shows err at the top of the page, and brings it into view:
  // the control that failed may be far below.
  function showError(err) {
    var msg = err && err.message ? err.message : String(err);
    errorBox.textContent = msg;
    errorBox.hidden = false;
    errorBox.scrollIntoView({ block: 'nearest' });
  }

  function clearError() {
    errorBox.hidden = true;
    errorBox.textContent = '';
  }

  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) { e.className = className; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }

  // Signing in and out

  function signOut(message) {
    sessionStorage.removeItem(KEY_STORAGE);
    project = null;
    stopRefresh();
    workspace.hidden = true;
    whoami.hidden = true;
    signin.hidden = false;
    // Nothing of this key's project stays for the next one to see.
    $('api-key').value = '';
    $('query').value = '';
    $('result').hidden = true;
    $('answer').textContent = '';
    $('chunks').textContent = '';
    uploadStatus.textContent = '';
    docsBody.textContent = '';
    if (message) { showError(message); }
    $('api-key').focus();
  }

  function connect() {
    clearError();
    return api('GET', '/me')
      .then(function (me) {
        project = me;
        $('project-name').textContent = me.name + ' (' + me.project_id + ')';
        return api('GET', '/customers?limit=' + OWNERS_LISTED);
      })
      .then(function (body) {
        firstPage = { customers: body.customers || [], more: !!body.next_cursor };
        return savedCustomer();
      })
      .then(function (saved) {
        chosen = saved;
        ownerFind.value = '';
        ownerFind.hidden = firstPage.customers.length < FIND_FROM && !firstPage.more;
        listed = firstPage;
        listOwners(chosen ? chosen.customer_id : project.project_id);
        signin.hidden = true;
        workspace.hidden = false;
        whoami.hidden = false;
        return loadDocuments();
      })
      .catch(showError);
  }

  // savedCustomer is the customer this tab chose before, if it is still
  // one of the project's: from the first page, or else found by its id.
  function savedCustomer() {
    var id = sessionStorage.getItem(OWNER_STORAGE);
    var c = id ? byID(firstPage.customers, id) : null;
    if (!id || c || !firstPage.more) { return Promise.resolve(c); }
    return api('GET', '/customers?limit=' + OWNERS_LISTED + '&find=' + encodeURIComponent(id))
      .then(function (body) { return byID(body.customers || [], id); });
  }

  function byID(customers, id) {
    for (var i = 0; i < customers.length; i++) {
      if (customers[i].customer_id === id) { return customers[i]; }
    }
    return null;
  }

  // listOwners lists the project and the customers of the page listed,
  // with the chosen customer among them even when the find does not
  // match it, so that finding never changes the owner.
  function listOwners(selected) {
    var customers = listed.customers.slice();
    if (chosen && chosen.customer_id === selected && !byID(customers, selected)) { customers.unshift(chosen); }
    ownerSelect.textContent = '';
    addOwner(project.project_id, 'Project: ' + project.name);
    customers.forEach(function (c) { addOwner(c.customer_id, 'Customer: ' + c.name + ' (' + c.customer_id + ')'); });
    if (listed.more) {
      var more = el('option', null, 'More customers: find one by name or id');
      more.disabled = true;
      ownerSelect.appendChild(more);
    }
    ownerSelect.value = selected;
    var n = listed.customers.length;
    var count = listed.more ? 'More than ' + n + ' customers' : n === 1 ? '1 customer' : n + ' customers';
    if (listed.find) { count += n === 1 && !listed.more ? ' matches' : ' match'; }
    $('customer-count').textContent = count;
  }

  // findOwners lists the customers whose name or id holds what the find
  // box holds, case aside, as GET /customers?find= finds them.
  function findOwners() {
    var find = ownerFind.value.trim();
    var asked = ++finds;
    clearTimeout(findTimer);
    if (!find || !firstPage.more) {
      var lower = find.toLowerCase();
      listed = !find ? firstPage : {
        find: find,
        customers: firstPage.customers.filter(function (c) {
          return c.name.toLowerCase().indexOf(lower) >= 0 || c.customer_id.toLowerCase().indexOf(lower) >= 0;
        })
      };
      listOwners(owner());
      return;
    }
    findTimer = setTimeout(function () {
      api('GET', '/customers?limit=' + OWNERS_LISTED + '&find=' + encodeURIComponent(find)).then(function (body) {
        if (asked !== finds) { return; }
        listed = { find: find, customers: body.customers || [], more: !!body.next_cursor };
        listOwners(owner());
      }).catch(showError);
    }, FIND_DELAY_MS);
  }

  function addOwner(id, label) {
    var o = el('option', null, label);
    o.value = id;
    ownerSelect.appendChild(o);
  }

  function owner() { return ownerSelect.value; }

  $('key-form').addEventListener('submit', function (e) {
    e.preventDefault();
    var key = $('api-key').value.trim();
    if (!key) { return; }
    sessionStorage.setItem(KEY_STORAGE, key);
    $('api-key').value = '';
    connect();
  });

  $('sign-out').addEventListener('click', function () { signOut(); });

  ownerFind.addEventListener('input', findOwners);

  ownerSelect.addEventListener('change', function () {
    chosen = byID(listed.customers, owner()) || (chosen && chosen.customer_id === owner() ? chosen : null);
    sessionStorage.setItem(OWNER_STORAGE, owner());
    $('result').hidden = true;
    shown = PAGE;
    loadDocuments().catch(showError);
  });

  // Documents

  function stopRefresh() {
    if (refreshTimer !== null) { clearTimeout(refreshTimer); refreshTimer = null; }
  }

  function documentsPath(forOwner, limit, cursor) {
    var path = '/documents?limit=' + limit + '&owner_id=' + encodeURIComponent(forOwner);
    return cursor ? path + '&cursor=' + encodeURIComponent(cursor) : path;
  }

  function loadDocuments() {
    stopRefresh();
    var forOwner = owner();
    return api('GET', documentsPath(forOwner, Math.min(Math.max(shown, PAGE), MAX_PAGE))).then(function (body) {
      if (forOwner !== owner()) { return; } // the owner changed meanwhile
      var docs = body.documents || [];
      docsBody.textContent = '';
      renderDocuments(docs);
      shown = docs.length;
      showMore(body.next_cursor);
      var busy = docs.some(function (d) { return d.status === 'PENDING' || d.status === 'PROCESSING'; });
      if (busy) {
        refreshTimer = setTimeout(function () { loadDocuments().catch(showError); }, REFRESH_MS);
      }
    });
  }

  function showMore(cursor) {
    nextCursor = cursor || null;
    moreDocs.hidden = nextCursor === null;
    moreDocs.disabled = false;
  }

  moreDocs.addEventListener('click', function () {
    var forOwner = owner();
    moreDocs.disabled = true;
    clearError();
    api('GET', documentsPath(forOwner, PAGE, nextCursor)).then(function (body) {
      if (forOwner !== owner()) { return; }
      var docs = body.documents || [];
      renderDocuments(docs);
      shown += docs.length;
      showMore(body.next_cursor);
    }).catch(function (err) { moreDocs.disabled = false; showError(err); });
  });

  // renderDocuments adds rows for docs below those the table has.
  function renderDocuments(docs) {
    docsEmpty.hidden = docs.length > 0 || docsBody.children.length > 0;
    docs.forEach(function (d) {
      var tr = el('tr');
      tr.dataset.documentId = d.document_id;
      var name = el('td', 'name', d.name);
      if (d.error) { name.appendChild(el('span', 'doc-error', d.error)); }
      tr.appendChild(name);
      var statusCell = el('td');
      var badge = el('span', 'badge', d.status);
      badge.dataset.status = d.status;
      statusCell.appendChild(badge);
      tr.appendChild(statusCell);
      tr.appendChild(el('td', 'num', String(d.chunks || 0)));
      tr.appendChild(el('td', null, new Date(d.created_at).toLocaleString()));
      var actions = el('td', 'num');
      var del = el('button', 'button small danger', 'Delete');
      del.type = 'button';
      del.setAttribute('aria-label', 'Delete ' + d.name);
      del.addEventListener('click', function () { deleteDocument(d, del); });
      actions.appendChild(del);
      tr.appendChild(actions);
      docsBody.appendChild(tr);
    });
  }

  // Deleting asks twice, on the button itself: no modal dialog to trap focus.
  function deleteDocument(d, button) {
    if (button.dataset.armed !== 'true') {
      button.dataset.armed = 'true';
      button.textContent = 'Confirm delete';
      button.setAttribute('aria-label', 'Confirm: delete ' + d.name);
      return;
    }
    button.disabled = true;
    clearError();
    api('DELETE', '/documents/' + encodeURIComponent(d.document_id))
      .then(loadDocuments)
      .catch(function (err) { button.disabled = false; showError(err); });
  }

  $('refresh').addEventListener('click', function () { clearError(); loadDocuments().catch(showError); });

  $('upload-form').addEventListener('submit', function (e) {
    e.preventDefault();
    var input = $('console-file');
    var files = Array.prototype.slice.call(input.files);
    if (!files.length) { uploadStatus.textContent = 'Choose one or more files first.'; return; }
    clearError();
    var forOwner = owner();
    var sent = 0;
    var failures = [];
    $('upload-button').disabled = true;
    var chain = Promise.resolve();
    files.forEach(function (f) {
      chain = chain.then(function () {
        uploadStatus.textContent = 'Uploading ' + f.name + ' (' + (sent + failures.length + 1) + ' of ' + files.length + ')…';
        var form = new FormData();
        form.append('data', new Blob([JSON.stringify({ owner_id: forOwner })], { type: 'application/json' }));
        form.append('file', f, f.name);
        return api('POST', '/upload/file', form)
          .then(function () { sent++; })
          .catch(function (err) { failures.push(f.name + ': ' + err.message); });
      });
    });
    chain.then(function () {
      $('upload-button').disabled = false;
      input.value = '';
      uploadStatus.textContent = sent + ' of ' + files.length + (files.length === 1 ? ' file' : ' files') + ' uploaded.';
      if (failures.length) { showError(failures.join('\n')); }
      return loadDocuments();
    }).catch(showError);
  });

  // Queries

  $('query-form').addEventListener('submit', function (e) {
    e.preventDefault();
    var text = $('query').value.trim();
    if (!text) { return; }
    clearError();
    var topK = Number($('top-k').value) || 5;
    var forOwner = owner();
    var req = forOwner === project.project_id
      ? api('POST', '/query/project', { project_id: forOwner, query: text, top_k: topK })
      : api('POST', '/query/customer', { customer_id: forOwner, query: text, top_k: topK });
    $('ask').disabled = true;
    $('result').hidden = true; // an answer shown must be this question's
    req.then(function (body) {
      renderResult(body, forOwner);
    }).catch(showError).then(function () { $('ask').disabled = false; });
  });

  function renderResult(body, forOwner) {
    $('answer').textContent = body.answer || '(no answer)';
    $('answer-model').textContent = body.answer_model ? 'Answered by ' + body.answer_model : '';
    var list = $('chunks');
    list.textContent = '';
    (body.chunks || []).forEach(function (ch) {
      var li = el('li', 'chunk');
      li.dataset.chunkId = ch.chunk_id;
      var meta = el('div', 'chunk-meta');
      meta.appendChild(el('span', 'chunk-doc', ch.document_name));
      meta.appendChild(el('span', 'chunk-page', ch.page === null || ch.page === undefined ? 'no page' : 'page ' + ch.page));
      meta.appendChild(el('span', 'chunk-score', 'score ' + Number(ch.score).toFixed(3)));
      if (ch.page !== null && ch.page !== undefined) {
        var open = el('button', 'button small secondary subpage', 'Open pages');
        open.type = 'button';
        open.setAttribute('aria-label', 'Open the pages around page ' + ch.page + ' of ' + ch.document_name + ' in a new tab');
        open.addEventListener('click', function () { openSubpage(ch, forOwner, open); });
        meta.appendChild(open);
      }
      li.appendChild(meta);
      var snippet = ch.text.length > SNIPPET_CHARS ? ch.text.slice(0, SNIPPET_CHARS) + '…' : ch.text;
      li.appendChild(el('p', 'chunk-text', snippet));
      list.appendChild(li);
    });
    if (!list.children.length) { list.appendChild(el('li', 'hint', 'No chunks matched.')); }
    $('result').hidden = false;
  }

  // The tab is opened at the click, while the browser still counts it as
  // the user's doing, and pointed at the subpage once its URL is known.
  function openSubpage(ch, forOwner, button) {
    clearError();
    var tab = window.open('', '_blank');
    button.disabled = true;
    api('POST', '/subpage', { chunk_id: ch.chunk_id, owner_id: forOwner, varience: SUBPAGE_VARIENCE })
      .then(function (body) {
        if (tab) {
          tab.opener = null;
          tab.location.href = body.subpage_url;
        } else {
          window.location.assign(body.subpage_url);
        }
      })
      .catch(function (err) {
        if (tab) { tab.close(); }
        showError(err);
      })
      .then(function () { button.disabled = false; });
  }

  if (sessionStorage.getItem(KEY_STORAGE)) {
    connect();
  } else {
    $('api-key').focus();
  }
})();
