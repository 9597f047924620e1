// An allocation: task states and events, resources, ports, restart/stop;
// a task's logs (streamed with follow), file browser and exec terminal.
import { get, put, req, token } from './api.js';
import { createScreen } from './term.js';
import { html, set, status, when, id, jobHref, nodeHref, allocHref, bytes, errBox, toast, esc, qs } from './util.js';
import { allocTable } from './job.js';

function header(a) {
  return html`<div class="crumbs"><a href="/ui/jobs">Jobs</a> / <a href="${jobHref(a.JobID, a.Namespace)}">${a.JobID}</a> / ${a.TaskGroup}</div>`;
}

// A short allocation ID (the CLI shows eight characters) opens the
// allocation it is the prefix of; several matches are listed to choose.
function byPrefix(ctx, prefix) {
  ctx.main.innerHTML = String(html`<h1>Allocation ${prefix}</h1><div id="err"></div><div id="matches"><p class="muted">Loading…</p></div>`);
  get(`/v1/allocations${qs({ prefix, namespace: '*' })}`, { signal: ctx.signal }).then((l) => {
    if (ctx.signal.aborted) return;
    if (l && l.length === 1) { ctx.navigate(allocHref(l[0].ID), true); return; }
    if (!l || !l.length) { ctx.notFound('Allocation not found', `No allocation ${prefix}: it never existed or was garbage collected.`); return; }
    set('matches', html`<p class="muted">${l.length} allocations start with ${prefix}:</p>${allocTable(l, { showJob: true })}`);
  }, (e) => { if (!ctx.signal.aborted) set('matches', errBox(e)); });
}

export function page(ctx, allocID) {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(allocID) && /^[0-9a-f-]{1,35}$/i.test(allocID)) return byPrefix(ctx, allocID);
  ctx.main.innerHTML = String(html`<div id="crumbs"></div><h1 id="allochead">Allocation ${id(allocID)}</h1><div id="err"></div><div id="alloc"></div>`);
  ctx.on('stopalloc', async () => { await put(`/v1/allocation/${allocID}/stop`); toast('Stop requested'); });
  ctx.on('restart', async (b) => { await put(`/v1/client/allocation/${allocID}/restart`, b.dataset.task ? { TaskName: b.dataset.task } : { AllTasks: true }); toast('Restart requested'); });
  ctx.watch(`/v1/allocation/${allocID}`, (a) => {
    set('crumbs', header(a));
    const live = a.ClientStatus === 'running' || a.ClientStatus === 'pending';
    set('allochead', html`Allocation ${id(a.ID)} ${status(a.ClientStatus)} <span class="muted" style="font-size:14px">${a.Name}</span>
      <span class="actions"><a class="btn" href="${allocHref(a.ID)}/fs" data-cap="read-fs" data-ns="${a.Namespace}">Files</a>${live ? html`<button data-act="restart" data-cap="alloc-lifecycle" data-ns="${a.Namespace}">Restart</button><button class="danger" data-act="stopalloc" data-cap="alloc-lifecycle" data-ns="${a.Namespace}" data-confirm="Stop this allocation? It is rescheduled.">Stop</button>` : ''}</span>`);
    const res = a.AllocatedResources || {};
    const shared = res.Shared || {};
    const ports = [...(shared.Ports || [])];
    for (const n of shared.Networks || []) for (const p of [...(n.ReservedPorts || []), ...(n.DynamicPorts || [])]) ports.push({ Label: p.Label, Value: p.Value, To: p.To, HostIP: n.IP });
    const tasks = Object.entries(a.TaskStates || {});
    const tr = res.Tasks || {};
    set('alloc', html`<div class="cards">
        <div class="card"><div class="muted">Client</div><div>${a.NodeID ? html`<a href="${nodeHref(a.NodeID)}">${a.NodeName || a.NodeID.slice(0, 8)}</a>` : '–'}</div></div>
        <div class="card"><div class="muted">Desired</div><div>${a.DesiredStatus}${a.DesiredDescription ? html` <span class="muted">(${a.DesiredDescription})</span>` : ''}</div></div>
        <div class="card"><div class="muted">Job version</div><div>${a.Job ? a.Job.Version : a.JobVersion}</div></div>
        <div class="card"><div class="muted">Created</div><div>${when(a.CreateTime)}</div></div>
      </div>
      ${a.ClientDescription ? html`<p class="muted">${a.ClientDescription}</p>` : ''}
      <h2>Tasks</h2>
      ${tasks.map(([name, t]) => html`<div class="panel task" data-task="${name}"><div style="display:flex;gap:10px;align-items:center;flex-wrap:wrap"><strong>${name}</strong> ${status(t.Failed ? 'failed' : t.State)} <span class="muted">started ${when(t.StartedAt)}${t.Restarts ? `, ${t.Restarts} restarts` : ''}</span>
        <span class="actions"><a class="btn" href="${allocHref(a.ID)}/${encodeURIComponent(name)}/logs" data-cap="read-logs" data-ns="${a.Namespace}">Logs</a><a class="btn" href="${allocHref(a.ID)}/${encodeURIComponent(name)}/fs" data-cap="read-fs" data-ns="${a.Namespace}">Files</a>${t.State === 'running' ? html`<a class="btn" href="${allocHref(a.ID)}/${encodeURIComponent(name)}/exec" data-cap="alloc-exec" data-ns="${a.Namespace}">Exec</a><button data-act="restart" data-task="${name}" data-cap="alloc-lifecycle" data-ns="${a.Namespace}">Restart</button>` : ''}</span></div>
        ${tr[name] ? html`<p class="muted">CPU ${tr[name].Cpu ? tr[name].Cpu.CpuShares : 0} MHz · memory ${tr[name].Memory ? tr[name].Memory.MemoryMB : 0} MiB${tr[name].Memory && tr[name].Memory.MemoryMaxMB ? ` (max ${tr[name].Memory.MemoryMaxMB} MiB)` : ''}</p>` : ''}
        <table class="events"><thead><tr><th>Time</th><th>Type</th><th>Description</th></tr></thead><tbody>${[...(t.Events || [])].reverse().map((e) => html`<tr><td>${when(e.Time)}</td><td>${e.Type}</td><td style="white-space:normal">${e.DisplayMessage || e.Message || ''}</td></tr>`)}</tbody></table></div>`)}
      <h2>Ports</h2>
      ${ports.length ? html`<table><thead><tr><th>Label</th><th>Address</th><th>To</th></tr></thead><tbody>${ports.map((p) => html`<tr><td>${p.Label}</td><td class="id">${p.HostIP || ''}:${p.Value}</td><td>${p.To || ''}</td></tr>`)}</tbody></table>` : html`<p class="muted">No ports.</p>`}
      <h2>Resources</h2>
      <table><thead><tr><th>Task</th><th>CPU</th><th>Memory</th></tr></thead><tbody>${Object.entries(tr).map(([n, r]) => html`<tr><td>${n}</td><td>${r.Cpu ? r.Cpu.CpuShares : 0} MHz</td><td>${r.Memory ? r.Memory.MemoryMB : 0} MiB</td></tr>`)}</tbody></table>
      ${shared.DiskMB ? html`<p class="muted">Ephemeral disk ${shared.DiskMB} MiB</p>` : ''}`);
  }, 'err', { notFound: 'Allocation not found', detail: `No allocation ${allocID}: it never existed or was garbage collected.` });
}

function taskTabs(allocID, task, tab) {
  const b = `${allocHref(allocID)}/${encodeURIComponent(task)}`;
  return html`<div class="crumbs"><a href="${allocHref(allocID)}">Allocation ${allocID.slice(0, 8)}</a> / ${task}</div><h1>Task ${task}</h1><div id="err"></div>
    <nav class="tabs"><a href="${b}/logs" class="${tab === 'logs' ? 'active' : ''}">Logs</a><a href="${b}/fs" class="${tab === 'fs' ? 'active' : ''}">Files</a><a href="${b}/exec" class="${tab === 'exec' ? 'active' : ''}" data-cap="alloc-exec" data-ns="*" data-alloc-ns>Exec</a></nav>`;
}

// allocNS puts the allocation's namespace on the task tabs that need a
// capability there (the exec tab: alloc-exec).
function allocNS(ctx, allocID) {
  get(`/v1/allocation/${allocID}`, { signal: ctx.signal }).then((a) => {
    for (const el of document.querySelectorAll('[data-alloc-ns]')) el.dataset.ns = a.Namespace;
  }, () => {});
}

export function task(ctx, allocID, name, tab = 'logs') {
  ctx.main.innerHTML = String(html`${taskTabs(allocID, name, tab)}<div id="tab"></div>`);
  allocNS(ctx, allocID);
  if (tab === 'exec') return exec(ctx, allocID, name);
  set('tab', html`<div class="filters"><select id="logtype" aria-label="Stream"><option>stdout</option><option>stderr</option></select><label><input type="checkbox" id="follow" checked> Follow</label><span class="muted" id="logstate"></span></div><pre class="code logs" id="logs" aria-label="Task log"></pre>`);
  let stream = null;
  // Each start ends the stream before it; the ended stream's own abort
  // error is not an error of the page (it is checked against its own
  // controller, not the newest one).
  const start = async () => {
    if (stream) stream.abort();
    const mine = new AbortController();
    stream = mine;
    const type = document.getElementById('logtype').value;
    const follow = document.getElementById('follow').checked;
    const out = document.getElementById('logs');
    out.textContent = '';
    set('err', '');
    set('logstate', follow ? 'streaming…' : '');
    try {
      // The last 64 KiB, then what follows; plain=true gives raw bytes.
      const r = await req('GET', `/v1/client/fs/logs/${allocID}?task=${encodeURIComponent(name)}&type=${type}&origin=end&offset=65536&follow=${follow}&plain=true`, undefined, { raw: true, signal: mine.signal });
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const atEnd = out.scrollTop + out.clientHeight >= out.scrollHeight - 20;
        out.append(dec.decode(value, { stream: true }));
        if (atEnd) out.scrollTop = out.scrollHeight;
      }
      if (!mine.signal.aborted) set('logstate', 'end of log');
    } catch (e) {
      if (mine.signal.aborted) return;
      set('err', errBox(e));
      set('logstate', '');
    }
  };
  ctx.signal.addEventListener('abort', () => stream && stream.abort(), { once: true });
  document.getElementById('logtype').addEventListener('change', start);
  document.getElementById('follow').addEventListener('change', start);
  start();
}

function fsView(ctx, allocID, base, dir, hrefBase) {
  const p = dir || '/';
  set('tab', html`<div class="crumbs" id="fspath"></div><div id="fs"><p class="muted">Loading…</p></div>`);
  const parts = p.split('/').filter(Boolean);
  set('fspath', html`<a href="${hrefBase}">${base || 'alloc'}</a>${parts.map((x, i) => html` / <a href="${hrefBase}/${parts.slice(0, i + 1).map(encodeURIComponent).join('/')}">${x}</a>`)}`);
  const full = (base ? `/${base}` : '') + (p === '/' ? '/' : p);
  (async () => {
    try {
      const st = await get(`/v1/client/fs/stat/${allocID}?path=${encodeURIComponent(full)}`);
      if (!st.IsDir) {
        const r = await req('GET', `/v1/client/fs/readat/${allocID}?path=${encodeURIComponent(full)}&offset=0&limit=262144`, undefined, { raw: true });
        const text = await r.text();
        set('fs', html`<p class="muted">${bytes(st.Size)} · modified ${when(st.ModTime)}${st.Size > 262144 ? ' · first 256 KiB shown' : ''}</p><pre class="code" id="filebody">${text}</pre>`);
        return;
      }
      const list = await get(`/v1/client/fs/ls/${allocID}?path=${encodeURIComponent(full)}`);
      const rows = [...(list || [])].sort((a, b) => (b.IsDir - a.IsDir) || a.Name.localeCompare(b.Name));
      set('fs', html`<div class="tablewrap"><table class="nav files"><thead><tr><th>Name</th><th>Size</th><th>Mode</th><th>Modified</th></tr></thead><tbody>${rows.map((f) => html`<tr><td><a href="${hrefBase}/${[...parts, f.Name].map(encodeURIComponent).join('/')}">${f.IsDir ? '📁 ' : ''}${f.Name}</a></td><td>${f.IsDir ? '' : bytes(f.Size)}</td><td class="id">${f.FileMode}</td><td>${when(f.ModTime)}</td></tr>`)}${rows.length ? '' : html`<tr><td colspan="4" class="muted">Empty directory</td></tr>`}</tbody></table></div>`);
    } catch (e) { set('fs', errBox(e)); }
  })();
}

export function fs(ctx, allocID, dir) {
  ctx.main.innerHTML = String(html`<div class="crumbs"><a href="${allocHref(allocID)}">Allocation ${allocID.slice(0, 8)}</a></div><h1>Files</h1><div id="err"></div><div id="tab"></div>`);
  fsView(ctx, allocID, '', dir, `${allocHref(allocID)}/fs`);
}

export function taskfs(ctx, allocID, name, dir) {
  ctx.main.innerHTML = String(html`${taskTabs(allocID, name, 'fs')}<div id="tab"></div>`);
  allocNS(ctx, allocID);
  fsView(ctx, allocID, name, dir, `${allocHref(allocID)}/${encodeURIComponent(name)}/fs`);
}

// A terminal over the exec websocket (Nomad's exec protocol): output
// frames go through a small screen (term.js) that applies CR, LF,
// backspace and line-editing sequences; keys are sent as the bytes a
// terminal would send.
function exec(ctx, allocID, name) {
  set('tab', html`<div class="filters"><input class="text" id="cmd" value="/bin/sh" aria-label="Command"><button class="primary" id="connect">Connect</button><span class="muted" id="termstate">Click the terminal and type; Ctrl-C and arrows work.</span></div><pre class="term" id="term" tabindex="0" aria-label="Terminal"></pre>`);
  const term = document.getElementById('term');
  let ws = null;
  let screen = createScreen();
  const enc = new TextEncoder();
  const b64 = (s) => { let bin = ''; for (const c of enc.encode(s)) bin += String.fromCharCode(c); return btoa(bin); };
  const write = (bytes) => {
    screen.write(bytes);
    term.textContent = screen.text();
    term.scrollTop = term.scrollHeight;
  };
  const send = (s) => { if (ws && ws.readyState === 1) ws.send(JSON.stringify({ stdin: { data: b64(s) } })); };
  const connect = () => {
    if (ws) ws.close();
    screen = createScreen();
    term.textContent = '';
    const cmd = document.getElementById('cmd').value.trim().split(/\s+/);
    const proto = location.protocol === 'https:' ? 'wss' : 'ws';
    // The handlers act only while their socket is the current one: a
    // reconnect's old socket closes after the new one opened.
    const sock = new WebSocket(`${proto}://${location.host}/v1/client/allocation/${allocID}/exec?ws_handshake=true&task=${encodeURIComponent(name)}&tty=true&command=${encodeURIComponent(JSON.stringify(cmd))}`);
    ws = sock;
    sock.onopen = () => {
      if (sock !== ws) return;
      // ws_handshake: a browser cannot set X-Nomad-Token on a websocket;
      // the agent authorizes the exec with this first message's token.
      sock.send(JSON.stringify({ version: 1, auth_token: token.get() }));
      sock.send(JSON.stringify({ tty_size: { height: 30, width: Math.max(40, Math.floor(term.clientWidth / 8)) } }));
      set('termstate', 'connected');
      term.focus();
    };
    sock.onmessage = (m) => {
      if (sock !== ws) return;
      const f = JSON.parse(m.data);
      const d = (f.stdout && f.stdout.data) || (f.stderr && f.stderr.data);
      if (d) write(Uint8Array.from(atob(d), (c) => c.charCodeAt(0)));
      if (f.exited) set('termstate', `exited ${f.result ? f.result.exit_code : ''}`);
    };
    sock.onerror = () => { if (sock === ws) set('termstate', 'connection error'); };
    sock.onclose = (e) => { if (sock === ws && !ctx.signal.aborted) set('termstate', html`closed${e.reason ? ': ' + e.reason : ''} (${e.code})`); };
  };
  ctx.signal.addEventListener('abort', () => ws && ws.close(), { once: true });
  document.getElementById('connect').addEventListener('click', connect);
  term.addEventListener('keydown', (e) => {
    const keys = { Enter: '\r', Backspace: '\x7f', Tab: '\t', Escape: '\x1b', ArrowUp: '\x1b[A', ArrowDown: '\x1b[B', ArrowRight: '\x1b[C', ArrowLeft: '\x1b[D' };
    let s = null;
    if (e.ctrlKey && e.key.length === 1) s = String.fromCharCode(e.key.toUpperCase().charCodeAt(0) - 64);
    else if (keys[e.key]) s = keys[e.key];
    else if (e.key.length === 1 && !e.metaKey) s = e.key;
    if (s !== null) { e.preventDefault(); send(s); }
  });
  term.addEventListener('paste', (e) => { e.preventDefault(); send(e.clipboardData.getData('text')); });
  connect();
}
