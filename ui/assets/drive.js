// Google Drive import on the hosted upload page: sign in (the server sends
// the browser to Google's consent page and back), browse and search the
// Drive, choose files, and import them. Each import becomes a row of the
// page's file list (upload.js), followed to SUCCEEDED or FAILED like an
// upload. Leaving through Done or Cancel ends the Drive connection.
//
// Every text that comes from Drive or the server (names, types, errors)
// goes into the page with textContent, never as HTML.
(function () {
  'use strict';

  var section = document.getElementById('drive');
  var uploads = window.docsift && window.docsift.uploads;
  if (!section || !uploads) { return; }

  var base = section.dataset.driveUrl;
  var PARALLEL_IMPORTS = 2;
  var MAX_ATTEMPTS = 5;      // tries of one import that Google or the server rate-limits
  var SEARCH_DELAY_MS = 300;
  var LEAVE_WAIT_MS = 2000;  // longest wait for the disconnect before leaving

  var connectButton = document.getElementById('drive-connect');
  var disconnectButton = document.getElementById('drive-disconnect');
  var message = document.getElementById('drive-message');
  var picker = document.getElementById('drive-picker');
  var pathNav = document.getElementById('drive-path');
  var search = document.getElementById('drive-search');
  var tbody = document.getElementById('drive-files');
  var status = document.getElementById('drive-status');
  var more = document.getElementById('drive-more');
  var importButton = document.getElementById('drive-import');

  var connected = section.dataset.connected === 'true';
  var folders = [{ id: '', name: 'My Drive' }]; // the path to the folder shown
  var query = '';          // the name search; '' shows the folder
  var nextPageToken = '';
  var listing = 0;         // the latest listing request; older answers are dropped
  var selected = {};       // file id -> item
  var queue = [];          // imports waiting
  var running = 0;         // imports in flight
  var searchTimer = null;

  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) { e.className = className; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function humanBytes(n) {
    if (n < 1024) { return n + ' B'; }
    var units = ['KB', 'MB', 'GB', 'TB'];
    var v = n;
    var i = -1;
    do { v /= 1024; i++; } while (v >= 1024 && i < units.length - 1);
    return (v < 10 ? v.toFixed(1) : Math.round(v)) + ' ' + units[i];
  }

  function shortDate(iso) {
    if (!iso) { return ''; }
    var d = new Date(iso);
    if (isNaN(d.getTime())) { return ''; }
    return d.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
  }

  function say(text, warning) {
    status.textContent = text;
    status.classList.toggle('warning', !!warning);
  }

  // call sends one request to the page's Drive endpoints and resolves to
  // {status, body, retryAfter}; a network failure is status 0.
  function call(method, path, body) {
    var opts = { method: method, cache: 'no-store', credentials: 'same-origin', headers: {} };
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    return fetch(base + path, opts).then(function (resp) {
      return resp.text().then(function (text) {
        var parsed = null;
        try { parsed = JSON.parse(text); } catch (e) { parsed = null; }
        return {
          status: resp.status,
          body: parsed || {},
          retryAfter: parseInt(resp.headers.get('Retry-After'), 10) || 1
        };
      });
    }, function () {
      return { status: 0, body: { error: 'The server could not be reached. Check your connection and try again.' }, retryAfter: 1 };
    });
  }

  // Signing in and out

  function connect() {
    connectButton.disabled = true;
    call('POST', '/connect').then(function (r) {
      if (r.status === 200 && r.body.auth_url) {
        window.location.assign(r.body.auth_url);
        return;
      }
      connectButton.disabled = false;
      if (r.status === 410) { uploads.showExpired(); }
      showMessage(r.body.error || ('Google Drive could not be opened (HTTP ' + r.status + ').'));
    });
  }

  function showMessage(text) {
    if (!message) {
      message = el('p', 'drive-message');
      message.id = 'drive-message';
      section.insertBefore(message, connectButton);
    }
    message.textContent = text;
  }

  // notConnected shows the sign-in button again: Google ended the grant,
  // or the server forgot it (a restart).
  function notConnected(text) {
    connected = false;
    picker.hidden = true;
    disconnectButton.hidden = true;
    connectButton.hidden = false;
    connectButton.disabled = false;
    if (text) { showMessage(text); }
  }

  function disconnect() {
    disconnectButton.disabled = true;
    call('POST', '/disconnect').then(function () {
      disconnectButton.disabled = false;
      notConnected('Google Drive is disconnected. Files already imported are kept.');
    });
  }

  // Leaving through Done or Cancel ends the grant first, unless upload.js
  // kept the user on the page (files still uploading).
  function endOnLeave(link) {
    if (!link) { return; }
    link.addEventListener('click', function (e) {
      if (!connected || e.defaultPrevented) { return; }
      e.preventDefault();
      connected = false;
      var go = function () { window.location.assign(link.href); };
      var timer = setTimeout(go, LEAVE_WAIT_MS);
      fetch(base + '/disconnect', { method: 'POST', keepalive: true, credentials: 'same-origin' })
        .catch(function () {})
        .then(function () { clearTimeout(timer); go(); });
    });
  }

  // Browsing

  function open() {
    connected = true;
    picker.hidden = false;
    connectButton.hidden = true;
    disconnectButton.hidden = false;
    load(true);
  }

  function listURL() {
    var params = [];
    if (query) {
      params.push('q=' + encodeURIComponent(query));
    } else if (folders[folders.length - 1].id) {
      params.push('folder=' + encodeURIComponent(folders[folders.length - 1].id));
    }
    if (nextPageToken) { params.push('page_token=' + encodeURIComponent(nextPageToken)); }
    return '/files' + (params.length ? '?' + params.join('&') : '');
  }

  function load(fresh) {
    if (fresh) {
      nextPageToken = '';
      tbody.textContent = '';
      renderPath();
    }
    var mine = ++listing;
    more.hidden = true;
    say('Loading…');
    call('GET', listURL()).then(function (r) {
      if (mine !== listing) { return; }
      if (r.status === 200) {
        (r.body.files || []).forEach(renderItem);
        nextPageToken = r.body.next_page_token || '';
        more.hidden = !nextPageToken;
        var n = tbody.children.length;
        if (n === 0) {
          say(query ? 'No files match “' + query + '”.' : 'This folder is empty.');
        } else {
          say(n + (n === 1 ? ' item' : ' items') + (nextPageToken ? ' shown' : '') + '.');
        }
        return;
      }
      if (r.status === 401) { notConnected(r.body.error); return; }
      if (r.status === 410) { uploads.showExpired(); notConnected(); return; }
      if (r.status === 429) {
        say('Waiting a moment: ' + (r.body.error || 'too many requests.'));
        setTimeout(function () { if (mine === listing) { load(false); } }, r.retryAfter * 1000);
        return;
      }
      say(r.body.error || ('Your files could not be listed (HTTP ' + r.status + ').'), true);
    });
  }

  function renderPath() {
    pathNav.textContent = '';
    if (query) {
      var back = el('button', 'crumb', folders[0].name);
      back.type = 'button';
      back.addEventListener('click', function () { clearSearch(); folders = folders.slice(0, 1); load(true); });
      pathNav.appendChild(back);
      pathNav.appendChild(el('span', 'crumb-sep', '›'));
      pathNav.appendChild(el('span', 'crumb current', 'Search: ' + query));
      return;
    }
    folders.forEach(function (f, i) {
      if (i > 0) { pathNav.appendChild(el('span', 'crumb-sep', '›')); }
      if (i === folders.length - 1) {
        var here = el('span', 'crumb current', f.name);
        here.setAttribute('aria-current', 'location');
        pathNav.appendChild(here);
        return;
      }
      var b = el('button', 'crumb', f.name);
      b.type = 'button';
      b.addEventListener('click', function () { folders = folders.slice(0, i + 1); load(true); });
      pathNav.appendChild(b);
    });
  }

  function renderItem(item) {
    var tr = el('tr', 'drive-item');
    tr.dataset.id = item.id;
    tr.dataset.kind = item.folder ? 'folder' : (item.importable ? 'file' : 'refused');

    var pick = el('td', 'pick');
    if (!item.folder) {
      var box = el('input');
      box.type = 'checkbox';
      box.disabled = !item.importable;
      box.checked = !!selected[item.id];
      box.setAttribute('aria-label', 'Select ' + item.name);
      box.addEventListener('change', function () {
        if (box.checked) { selected[item.id] = item; } else { delete selected[item.id]; }
        updateImportButton();
      });
      pick.appendChild(box);
    }
    tr.appendChild(pick);

    var name = el('td', 'name');
    if (item.folder) {
      var openFolder = el('button', 'folder-link', item.name);
      openFolder.type = 'button';
      openFolder.addEventListener('click', function () {
        clearSearch();
        folders.push({ id: item.id, name: item.name });
        load(true);
      });
      name.appendChild(openFolder);
    } else {
      name.appendChild(el('span', 'item-name', item.name));
    }
    if (item.refused) { name.appendChild(el('span', 'refused', 'Cannot be imported: ' + item.refused)); }
    tr.appendChild(name);

    tr.appendChild(el('td', 'type', item.type || ''));
    tr.appendChild(el('td', 'num', typeof item.size === 'number' ? humanBytes(item.size) : '—'));
    tr.appendChild(el('td', 'date', shortDate(item.modified_time)));
    tbody.appendChild(tr);
  }

  function clearSearch() {
    query = '';
    search.value = '';
  }

  function updateImportButton() {
    var n = Object.keys(selected).length;
    importButton.disabled = n === 0;
    importButton.textContent = n === 0 ? 'Import selected' : 'Import ' + n + (n === 1 ? ' file' : ' files');
  }

  // Importing

  function importSelected() {
    if (uploads.isExpired()) { uploads.showExpired(); return; }
    Object.keys(selected).forEach(function (id) {
      var item = selected[id];
      var row = uploads.addRow(item.name, typeof item.size === 'number' ? item.size : undefined);
      uploads.setStatus(row, 'QUEUED');
      queue.push({ item: item, row: row, attempts: 0 });
    });
    selected = {};
    tbody.querySelectorAll('input[type="checkbox"]').forEach(function (b) { b.checked = false; });
    updateImportButton();
    pump();
  }

  function pump() {
    while (running < PARALLEL_IMPORTS && queue.length) {
      run(queue.shift());
    }
  }

  function run(task) {
    running++;
    uploads.setStatus(task.row, 'IMPORTING');
    call('POST', '/import', { file_id: task.item.id }).then(function (r) {
      running--;
      if (r.status === 200 && r.body.job_id) {
        uploads.track(task.row, r.body);
      } else if (r.status === 429 && ++task.attempts < MAX_ATTEMPTS) {
        // Over the session's rate limit or pending bound, or Google
        // asking to slow down: wait as told, then try again.
        uploads.setStatus(task.row, 'QUEUED');
        setTimeout(function () { queue.unshift(task); pump(); }, r.retryAfter * 1000);
      } else if (r.status === 401) {
        uploads.fail(task.row, r.body.error || 'Google Drive is no longer connected.');
        queue.splice(0).forEach(function (t) { uploads.fail(t.row, 'Not imported: Google Drive is no longer connected.'); });
        notConnected(r.body.error);
      } else if (r.status === 410) {
        uploads.fail(task.row, r.body.error || 'The upload link has expired.');
        uploads.showExpired();
      } else {
        uploads.fail(task.row, r.body.error || ('The import failed (HTTP ' + r.status + ').'));
      }
      pump();
    });
  }

  // Wiring

  connectButton.addEventListener('click', connect);
  disconnectButton.addEventListener('click', disconnect);
  importButton.addEventListener('click', importSelected);
  more.addEventListener('click', function () { load(false); });
  search.addEventListener('input', function () {
    if (searchTimer !== null) { clearTimeout(searchTimer); }
    searchTimer = setTimeout(function () {
      searchTimer = null;
      var q = search.value.trim();
      if (q === query) { return; }
      query = q;
      load(true);
    }, SEARCH_DELAY_MS);
  });
  uploads.addBusyCheck(function () { return running > 0 || queue.length > 0; });
  endOnLeave(document.getElementById('done'));
  endOnLeave(document.getElementById('cancel'));

  // The sign-in's outcome came as ?drive=…; once shown, a reload should
  // not show it again.
  if (window.location.search && window.history.replaceState) {
    window.history.replaceState(null, '', window.location.pathname);
  }
  if (connected) { open(); }
})();
