// The hosted upload page: choose or drop files, upload each with a progress
// bar, then follow each file's job until it succeeds or fails. Files
// imported from Google Drive (drive.js) join the same list through
// window.docsift.uploads.
//
// Every text that comes from a file or the server (names, errors) goes into
// the page with textContent, never as HTML.
(function () {
  'use strict';

  var root = document.getElementById('upload');
  if (!root) { return; }

  var uploadURL = root.dataset.uploadUrl;
  var jobsURL = root.dataset.jobsUrl;
  var maxBytes = Number(root.dataset.maxBytes) || 0;
  var maxLabel = root.dataset.maxLabel || '';

  var PARALLEL_UPLOADS = 2;
  var POLL_MS = 1000;
  var POLL_MAX_MS = 10000;

  var LABELS = {
    QUEUED: 'Waiting',
    UPLOADING: 'Uploading',
    IMPORTING: 'Importing',
    PENDING: 'Pending',
    PROCESSING: 'Processing',
    SUCCEEDED: 'Succeeded',
    FAILED: 'Failed'
  };
  var TERMINAL = { SUCCEEDED: true, FAILED: true };

  var dropzone = document.getElementById('dropzone');
  var input = document.getElementById('file-input');
  var list = document.getElementById('file-list');
  var section = document.getElementById('files-section');
  var summary = document.getElementById('summary');
  var done = document.getElementById('done');
  var closeURL = root.dataset.closeUrl;

  // Leaving by Done or Cancel ends the session on the server, so that the
  // link, left in the browser's history, opens nothing more. A beacon goes
  // out as the page does, where a request would be cut short. A click that
  // opens the link in another tab leaves nothing.
  function closeSession(how, e) {
    if (e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) { return; }
    if (closeURL && navigator.sendBeacon) { navigator.sendBeacon(closeURL + '?how=' + how); }
  }
  document.getElementById('cancel').addEventListener('click', function (e) { closeSession('cancel', e); });

  if (!list) { // this session offers neither uploads nor imports
    done.addEventListener('click', function (e) { closeSession('done', e); });
    return;
  }

  var rows = [];          // every file row, in the order shown
  var byJob = {};         // job id -> row
  var queue = [];         // rows waiting to upload
  var uploading = 0;      // uploads in flight
  var pollTimer = null;
  var pollDelay = POLL_MS;
  var expired = false;
  var leaveAnyway = false;
  var busyChecks = [];    // other work that leaving would cut short (imports)

  // humanBytes writes sizes as the server does (its limit's label): in
  // units of 1024, named so.
  function humanBytes(n) {
    if (n < 1024) { return n + ' bytes'; }
    var units = ['KiB', 'MiB', 'GiB'];
    var v = n;
    var i = -1;
    do { v /= 1024; i++; } while (v >= 1024 && i < units.length - 1);
    return (v < 10 ? v.toFixed(1) : Math.round(v)) + ' ' + units[i];
  }

  // overLimit says a size is over the limit, in bytes when rounding
  // would make the two read alike ("64 MiB, over the limit of 64 MiB").
  function overLimit(n) {
    var s = humanBytes(n);
    if (s.replace('.0 ', ' ') === maxLabel.replace('.0 ', ' ')) {
      return n + ' bytes, over the limit of ' + maxBytes + ' bytes (' + maxLabel + ')';
    }
    return s + ', over the limit of ' + maxLabel;
  }

  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) { e.className = className; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function addRow(name, size) {
    var li = el('li', 'file');
    var main = el('div', 'file-main');
    var nameEl = el('span', 'file-name', name);
    main.appendChild(nameEl);
    if (size !== undefined && size !== null) {
      main.appendChild(el('span', 'file-size', humanBytes(size)));
    }
    var badge = el('span', 'badge');
    var bar = el('progress');
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute('aria-label', 'Upload progress of ' + name);
    var error = el('p', 'file-error');
    li.appendChild(main);
    li.appendChild(badge);
    li.appendChild(bar);
    li.appendChild(error);
    list.appendChild(li);
    section.hidden = false;
    var row = { name: name, li: li, badge: badge, bar: bar, error: error, status: '', jobId: '' };
    rows.push(row);
    return row;
  }

  function setStatus(row, status, detail) {
    var changed = row.status !== status;
    row.status = status;
    row.li.dataset.status = status;
    row.badge.dataset.status = status;
    row.badge.textContent = detail || LABELS[status] || status;
    row.bar.hidden = row.noBar || (status !== 'UPLOADING' && status !== 'QUEUED');
    // The summary is a polite live region: screen readers hear the counts.
    if (changed) { updateSummary(); }
  }

  function fail(row, message) {
    row.error.textContent = message;
    setStatus(row, 'FAILED');
  }

  function setProgress(row, fraction) {
    var pct = Math.max(0, Math.min(100, Math.round(fraction * 100)));
    row.bar.value = pct;
    row.badge.textContent = LABELS.UPLOADING + ' ' + pct + '%';
  }

  function counts() {
    var c = { total: rows.length, done: 0, failed: 0, busy: 0 };
    rows.forEach(function (r) {
      if (r.status === 'SUCCEEDED') { c.done++; } else if (r.status === 'FAILED') { c.failed++; } else { c.busy++; }
    });
    return c;
  }

  function updateSummary() {
    if (expired) { return; }
    summary.classList.remove('warning');
    var c = counts();
    if (c.total === 0) { summary.textContent = ''; return; }
    var parts = [];
    parts.push(c.done + ' of ' + c.total + (c.total === 1 ? ' file' : ' files') + ' ready');
    if (c.failed) { parts.push(c.failed + ' failed'); }
    if (c.busy) { parts.push(c.busy + ' in progress'); }
    summary.textContent = parts.join(' · ') + '.';
  }

  function parseJSON(text) {
    try { return JSON.parse(text); } catch (e) { return null; }
  }

  function showExpired() {
    expired = true;
    stopPolling();
    summary.classList.add('warning');
    summary.textContent = 'This upload link has expired. Files already uploaded are kept; ask the site that sent you here for a new link to add more.';
    queue.splice(0).forEach(function (row) { fail(row, 'Not uploaded: the upload link has expired.'); });
  }

  // Choosing and dropping files

  function addFiles(files) {
    if (expired) { showExpired(); return; }
    leaveAnyway = false; // Done warns again about these
    for (var i = 0; i < files.length; i++) {
      var f = files[i];
      var row = addRow(f.name, f.size);
      if (maxBytes && f.size > maxBytes) {
        fail(row, 'This file is ' + overLimit(f.size) + '.');
        continue;
      }
      if (f.size === 0) {
        fail(row, 'This file is empty.');
        continue;
      }
      row.file = f;
      setStatus(row, 'QUEUED');
      queue.push(row);
    }
    pump();
  }

  function pump() {
    while (uploading < PARALLEL_UPLOADS && queue.length) {
      upload(queue.shift());
    }
  }

  function upload(row) {
    uploading++;
    setStatus(row, 'UPLOADING');
    setProgress(row, 0);
    var xhr = new XMLHttpRequest();
    xhr.open('POST', uploadURL);
    xhr.upload.addEventListener('progress', function (e) {
      if (e.lengthComputable) { setProgress(row, e.loaded / e.total); }
    });
    xhr.addEventListener('load', function () {
      var body = parseJSON(xhr.responseText) || {};
      if (xhr.status === 429) {
        // Over the session's rate limit: wait as told, then try again.
        var wait = parseInt(xhr.getResponseHeader('Retry-After'), 10) || 1;
        uploading--;
        setStatus(row, 'QUEUED');
        setTimeout(function () { queue.unshift(row); pump(); }, wait * 1000);
        return;
      }
      row.file = null;
      finish();
      if (xhr.status === 200 && body.job_id) {
        row.jobId = body.job_id;
        byJob[body.job_id] = row;
        row.bar.value = 100;
        setStatus(row, body.status || 'PENDING');
        schedulePoll(0);
        return;
      }
      if (xhr.status === 410) {
        fail(row, body.error || 'The upload link has expired.');
        showExpired();
        return;
      }
      fail(row, body.error || ('The upload failed (HTTP ' + xhr.status + ').'));
    });
    xhr.addEventListener('error', function () {
      row.file = null;
      finish();
      fail(row, 'The upload failed: the server could not be reached. Check your connection and add the file again.');
    });
    xhr.addEventListener('abort', function () {
      row.file = null;
      finish();
      fail(row, 'The upload was cancelled.');
    });
    var form = new FormData();
    form.append('file', row.file, row.file.name);
    xhr.send(form);

    function finish() {
      uploading--;
      pump();
    }
  }

  function listenForFiles() {
    dropzone.addEventListener('click', function () { input.click(); });
    dropzone.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ' || e.key === 'Spacebar') {
        e.preventDefault();
        input.click();
      }
    });
    input.addEventListener('change', function () {
      addFiles(input.files);
      input.value = '';
    });

    // A file dropped outside the zone would make the browser open it and
    // leave the page, uploads and all.
    ['dragover', 'drop'].forEach(function (type) {
      window.addEventListener(type, function (e) { e.preventDefault(); });
    });
    var dragDepth = 0;
    dropzone.addEventListener('dragenter', function (e) {
      e.preventDefault();
      dragDepth++;
      dropzone.classList.add('dragover');
    });
    dropzone.addEventListener('dragleave', function () {
      dragDepth = Math.max(0, dragDepth - 1);
      if (dragDepth === 0) { dropzone.classList.remove('dragover'); }
    });
    dropzone.addEventListener('dragover', function (e) {
      e.preventDefault();
      if (e.dataTransfer) { e.dataTransfer.dropEffect = 'copy'; }
    });
    dropzone.addEventListener('drop', function (e) {
      e.preventDefault();
      dragDepth = 0;
      dropzone.classList.remove('dragover');
      if (e.dataTransfer && e.dataTransfer.files && e.dataTransfer.files.length) {
        addFiles(e.dataTransfer.files);
      }
    });
  }
  if (dropzone) { listenForFiles(); } // this session allows uploads

  // Following jobs

  function stopPolling() {
    if (pollTimer !== null) { clearTimeout(pollTimer); pollTimer = null; }
  }

  function schedulePoll(delay) {
    if (expired) { return; }
    stopPolling();
    pollTimer = setTimeout(poll, delay);
  }

  function openJobs() {
    return Object.keys(byJob).filter(function (id) { return !TERMINAL[byJob[id].status]; });
  }

  function apply(job) {
    var row = byJob[job.job_id];
    if (!row) { return; }
    if (job.status === 'FAILED') {
      fail(row, job.error || 'Processing failed.');
    } else {
      setStatus(row, job.status);
    }
  }

  function poll() {
    pollTimer = null;
    var ids = openJobs();
    if (!ids.length) { return; }
    var query = ids.map(function (id) { return 'job_id=' + encodeURIComponent(id); }).join('&');
    fetch(jobsURL + '?' + query, { cache: 'no-store', credentials: 'same-origin' })
      .then(function (resp) {
        return resp.text().then(function (text) { return { status: resp.status, body: parseJSON(text) || {} }; });
      })
      .then(function (r) {
        if (r.status === 410) { showExpired(); return; }
        if (r.status !== 200) { throw new Error(r.body.error || ('HTTP ' + r.status)); }
        var seen = {};
        (r.body.jobs || []).forEach(function (job) { seen[job.job_id] = true; apply(job); });
        ids.forEach(function (id) {
          if (!seen[id]) { fail(byJob[id], 'This file was removed.'); }
        });
        pollDelay = POLL_MS;
        schedulePoll(pollDelay);
      })
      .catch(function () {
        // A blip in the connection: try again, less often.
        pollDelay = Math.min(pollDelay * 2, POLL_MAX_MS);
        schedulePoll(pollDelay);
      });
  }

  // Files uploaded earlier in this session (the page was reloaded).
  function loadEarlier() {
    fetch(jobsURL, { cache: 'no-store', credentials: 'same-origin' })
      .then(function (resp) {
        if (resp.status === 410) { showExpired(); return null; }
        return resp.ok ? resp.json() : null;
      })
      .then(function (body) {
        if (!body || !body.jobs) { return; }
        body.jobs.forEach(function (job) {
          if (byJob[job.job_id]) { return; }
          var row = addRow(job.name, job.size);
          row.jobId = job.job_id;
          byJob[job.job_id] = row;
          apply(job);
        });
        schedulePoll(POLL_MS);
      })
      .catch(function () {});
  }

  // Leaving

  function otherWorkBusy() {
    return busyChecks.some(function (busy) { return busy(); });
  }

  done.addEventListener('click', function (e) {
    if (leaveAnyway || (uploading === 0 && queue.length === 0 && !otherWorkBusy())) {
      closeSession('done', e);
      return;
    }
    e.preventDefault();
    leaveAnyway = true;
    summary.classList.add('warning');
    summary.textContent = 'Files are still uploading. Leaving now stops them; press Done again to leave anyway.';
  });

  // What drive.js needs to put its imports in the list and follow them
  // like uploads.
  window.docsift = window.docsift || {};
  window.docsift.uploads = {
    addRow: function (name, size) {
      var row = addRow(name, size);
      row.noBar = true;
      return row;
    },
    setStatus: setStatus,
    fail: fail,
    track: function (row, job) {
      row.jobId = job.job_id;
      byJob[job.job_id] = row;
      setStatus(row, job.status || 'PENDING');
      schedulePoll(0);
    },
    isExpired: function () { return expired; },
    showExpired: showExpired,
    addBusyCheck: function (busy) { busyChecks.push(busy); }
  };

  loadEarlier();
})();
