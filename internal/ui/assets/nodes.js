// Clients: the list and a client's page (status, eligibility and drain
// toggles, attributes, drivers, devices, allocations, host figures).
import { get, put } from './api.js';
import { html, set, status, when, id, nodeHref, bytes, toast, qs, errBox } from './util.js';
import { allocTable } from './job.js';

export function list(ctx) {
  ctx.main.innerHTML = String(html`<h1>Clients</h1><div id="err"></div>
    <div class="filters"><input data-search id="nodefilter" placeholder="Filter by name, class, datacenter" aria-label="Filter clients" value="${ctx.query.get('search') || ''}"></div>
    <div class="tablewrap"><table class="nav"><thead><tr><th>ID</th><th>Name</th><th>Status</th><th>Eligibility</th><th class="hide-sm">Datacenter</th><th class="hide-sm">Pool</th><th class="hide-sm">Class</th><th class="hide-sm">Address</th><th class="hide-sm">Version</th></tr></thead><tbody id="noderows"></tbody></table></div>`);
  let nodes = [];
  const draw = () => {
    const f = document.getElementById('nodefilter').value.toLowerCase();
    const l = nodes.filter((n) => !f || [n.Name, n.NodeClass, n.Datacenter, n.ID].some((x) => (x || '').toLowerCase().includes(f)));
    set('noderows', l.length ? html`${l.map((n) => html`<tr data-node="${n.ID}"><td>${id(n.ID, nodeHref(n.ID))}</td><td><a href="${nodeHref(n.ID)}">${n.Name}</a></td><td>${status(n.Status)}${n.Drain ? html` ${status('draining')}` : ''}</td><td>${status(n.SchedulingEligibility)}</td><td class="hide-sm">${n.Datacenter}</td><td class="hide-sm">${n.NodePool}</td><td class="hide-sm">${n.NodeClass || '–'}</td><td class="hide-sm id">${n.Address}</td><td class="hide-sm">${n.Version}</td></tr>`)}` : html`<tr><td colspan="9" class="muted">No clients.</td></tr>`);
  };
  document.getElementById('nodefilter').addEventListener('input', draw);
  ctx.watch('/v1/nodes', (n) => { nodes = n || []; draw(); });
}

function hostStats(s) {
  if (!s) return '';
  const mem = s.Memory || {};
  const cpu = (s.CPU || []).reduce((a, c) => a + (c.Total || 0), 0) / Math.max(1, (s.CPU || []).length);
  return html`<div class="cards">
    <div class="card"><div class="muted">CPU used</div><div class="big">${cpu.toFixed(1)}%</div><div class="muted">${(s.CPU || []).length} cores · ${Math.round(s.CPUTicksConsumed || 0)} MHz</div></div>
    <div class="card"><div class="muted">Memory used</div><div class="big">${bytes(mem.Used)}</div><div class="muted">of ${bytes(mem.Total)}</div></div>
    <div class="card"><div class="muted">Uptime</div><div class="big">${Math.floor((s.Uptime || 0) / 3600)}h</div></div>
    ${(s.DiskStats || []).slice(0, 2).map((d) => html`<div class="card"><div class="muted">Disk ${d.Mountpoint}</div><div class="big">${(d.UsedPercent || 0).toFixed(0)}%</div><div class="muted">of ${bytes(d.Size)}</div></div>`)}
  </div>`;
}

// A short client ID (the CLI shows eight characters) opens the client it
// is the prefix of; several matches are listed to choose.
function byPrefix(ctx, prefix) {
  ctx.main.innerHTML = String(html`<div class="crumbs"><a href="/ui/clients">Clients</a></div><h1>Client ${prefix}</h1><div id="err"></div><div id="matches"><p class="muted">Loading…</p></div>`);
  get(`/v1/nodes${qs({ prefix })}`, { signal: ctx.signal }).then((l) => {
    if (ctx.signal.aborted) return;
    if (l && l.length === 1) { ctx.navigate(nodeHref(l[0].ID), true); return; }
    if (!l || !l.length) { ctx.notFound('Client not found', `No client ${prefix}: it never registered or was garbage collected.`); return; }
    set('matches', html`<p class="muted">${l.length} clients start with ${prefix}:</p><ul>${l.map((n) => html`<li><a href="${nodeHref(n.ID)}">${n.Name}</a> <span class="id">${n.ID}</span></li>`)}</ul>`);
  }, (e) => { if (!ctx.signal.aborted) set('matches', errBox(e)); });
}

export function page(ctx, nodeID) {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(nodeID) && /^[0-9a-f-]{1,35}$/i.test(nodeID)) return byPrefix(ctx, nodeID);
  ctx.main.innerHTML = String(html`<div class="crumbs"><a href="/ui/clients">Clients</a></div><h1 id="nodehead">Client ${id(nodeID)}</h1><div id="err"></div>
    <div id="nodeinfo"></div><h2>Host</h2><div id="hoststats"><p class="muted">Loading…</p></div><div id="hosterr"></div><h2>Allocations</h2><div id="nodeallocs"></div><h2>Attributes</h2><div id="attrs"></div>`);
  let realID = nodeID;
  ctx.on('eligibility', async (b) => { await put(`/v1/node/${realID}/eligibility`, { NodeID: realID, Eligibility: b.dataset.to }); toast(`Marked ${b.dataset.to}`); });
  ctx.on('drain', async (b) => {
    if (b.dataset.to === 'on') await put(`/v1/node/${realID}/drain`, { NodeID: realID, DrainSpec: { Deadline: 3600e9, IgnoreSystemJobs: false } });
    else await put(`/v1/node/${realID}/drain`, { NodeID: realID, DrainSpec: null, MarkEligible: true });
    toast(b.dataset.to === 'on' ? 'Drain started' : 'Drain stopped');
  });
  ctx.watch(`/v1/node/${nodeID}`, (n) => {
    realID = n.ID;
    const elig = n.SchedulingEligibility === 'eligible';
    set('nodehead', html`${n.Name} ${status(n.Status)} ${status(n.SchedulingEligibility)}${n.DrainStrategy ? html` ${status('draining')}` : ''}
      <span class="actions"><button data-act="eligibility" data-cap="node-write" data-to="${elig ? 'ineligible' : 'eligible'}">${elig ? 'Mark ineligible' : 'Mark eligible'}</button>
      <button class="${n.DrainStrategy ? '' : 'danger'}" data-act="drain" data-cap="node-write" data-to="${n.DrainStrategy ? 'off' : 'on'}" ${n.DrainStrategy ? '' : `data-confirm="Drain ${n.Name}? Its allocations move elsewhere within an hour."`}>${n.DrainStrategy ? 'Stop drain' : 'Drain'}</button></span>`);
    const r = n.NodeResources || {};
    set('nodeinfo', html`<div class="panel"><dl class="kv"><dt>ID</dt><dd>${id(n.ID)}</dd><dt>Address</dt><dd class="id">${n.HTTPAddr}</dd><dt>Datacenter</dt><dd>${n.Datacenter}</dd><dt>Node pool</dt><dd>${n.NodePool}</dd><dt>Class</dt><dd>${n.NodeClass || '–'}</dd>
      <dt>CPU</dt><dd>${r.Cpu ? r.Cpu.CpuShares : 0} MHz (${r.Cpu ? r.Cpu.TotalCpuCores : 0} cores)</dd><dt>Memory</dt><dd>${r.Memory ? r.Memory.MemoryMB : 0} MiB</dd><dt>Disk</dt><dd>${r.Disk ? r.Disk.DiskMB : 0} MiB</dd>
      <dt>Drivers</dt><dd>${Object.entries(n.Drivers || {}).map(([d, i]) => html`${status(i.Healthy ? 'healthy' : 'unhealthy')} ${d} `)}</dd>
      <dt>Devices</dt><dd>${(r.Devices || []).length ? (r.Devices || []).map((d) => html`${d.Vendor}/${d.Type}/${d.Name} (${(d.Instances || []).length}) `) : '–'}</dd>
      <dt>Foreign ports</dt><dd>${(n.ForeignPorts || []).length ? html`<span class="id">${n.ForeignPorts.join(', ')}</span> <span class="muted">(bound by processes Drover did not start)</span>` : html`<span class="muted">none seen</span>`}</dd>
      <dt>Last heartbeat status</dt><dd>${n.StatusDescription || n.Status} ${when(n.StatusUpdatedAt ? n.StatusUpdatedAt * 1e9 : 0)}</dd></dl></div>`);
    const attrs = Object.entries(n.Attributes || {}).sort();
    const meta = Object.entries(n.Meta || {}).sort();
    set('attrs', html`<div class="tablewrap"><table><tbody>${attrs.map(([k, v]) => html`<tr><td class="id">${k}</td><td style="white-space:normal">${v}</td></tr>`)}${meta.map(([k, v]) => html`<tr><td class="id">meta.${k}</td><td>${v}</td></tr>`)}</tbody></table></div>`);
  }, 'err', { notFound: 'Client not found', detail: `No client ${nodeID}: it never registered or was garbage collected.` });
  ctx.watch(`/v1/node/${nodeID}/allocations`, (a) => set('nodeallocs', allocTable(a, { showJob: true, showNode: false })));
  // Host figures have no index: polled while the page is open.
  ctx.watch(`/v1/client/stats${qs({ node_id: nodeID })}`, (s) => set('hoststats', hostStats(s)), 'hosterr');
}
