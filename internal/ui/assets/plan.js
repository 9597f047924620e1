// Plans and their explanations: job diffs, placement failures (an
// AllocMetric), Drover's placement explain, and the edit → plan → run
// editor used by the Run job page and a job's Definition tab.
import { req, put } from './api.js';
import { html, errBox, set, jobHref } from './util.js';

const SIGN = { Added: '+', Deleted: '-', Edited: '~', None: ' ' };
const CLS = { Added: 'add', Deleted: 'del', Edited: 'mod' };

function fieldLines(fields, pad) {
  return (fields || []).filter((f) => f.Type !== 'None').map((f) => html`<div class="${CLS[f.Type] || ''}">${pad}${SIGN[f.Type] || ' '} ${f.Name}: ${f.Type === 'Added' ? html`"${f.New}"` : f.Type === 'Deleted' ? html`"${f.Old}"` : html`"${f.Old}" => "${f.New}"`}${f.Annotations && f.Annotations.length ? html` <span class="muted">(${f.Annotations.join(', ')})</span>` : ''}</div>`);
}
function objLines(objs, pad) {
  return (objs || []).filter((o) => o.Type !== 'None').map((o) => html`<div class="${CLS[o.Type] || ''}">${pad}${SIGN[o.Type]} ${o.Name} {</div>${fieldLines(o.Fields, pad + '    ')}${objLines(o.Objects, pad + '    ')}<div class="${CLS[o.Type] || ''}">${pad}  }</div>`);
}

// diff renders an api.JobDiff as the CLI's +/-/~ text.
export function diff(d) {
  if (!d || d.Type === 'None' || !d.Type) return html`<p class="muted">No changes.</p>`;
  return html`<pre class="code diff"><div class="${CLS[d.Type] || ''}">${SIGN[d.Type]} Job: "${d.ID}"</div>${fieldLines(d.Fields, '')}${objLines(d.Objects, '')}${(d.TaskGroups || []).filter((g) => g.Type !== 'None').map((g) => html`<div class="${CLS[g.Type] || ''}">${SIGN[g.Type]} Task Group: "${g.Name}"${g.Updates ? html` <span class="muted">(${Object.entries(g.Updates).map(([k, v]) => `${v} ${k}`).join(', ')})</span>` : ''}</div>${fieldLines(g.Fields, '  ')}${objLines(g.Objects, '  ')}${(g.Tasks || []).filter((t) => t.Type !== 'None').map((t) => html`<div class="${CLS[t.Type] || ''}">  ${SIGN[t.Type]} Task: "${t.Name}"${t.Annotations && t.Annotations.length ? html` <span class="muted">(${t.Annotations.join(', ')})</span>` : ''}</div>${fieldLines(t.Fields, '    ')}${objLines(t.Objects, '    ')}`)}`)}</pre>`;
}

// failures renders FailedTGAllocs (group -> AllocMetric): why a group
// could not be placed.
export function failures(failed) {
  const groups = Object.entries(failed || {});
  if (!groups.length) return '';
  return html`${groups.map(([g, m]) => html`<div class="notice placement-failure" data-group="${g}">
    <strong>Task group "${g}" failed to place${m.CoalescedFailures ? ` ${m.CoalescedFailures + 1} allocations` : ''}</strong>
    <ul>
      ${m.NodesEvaluated === 0 ? html`<li>No nodes were eligible for evaluation</li>` : html`<li>${m.NodesEvaluated} nodes evaluated, ${m.NodesFiltered || 0} filtered, ${m.NodesExhausted || 0} exhausted</li>`}
      ${Object.entries(m.NodesAvailable || {}).filter(([, n]) => n === 0).map(([dc]) => html`<li>No nodes are available in datacenter "${dc}"</li>`)}
      ${Object.entries(m.ClassFiltered || {}).map(([k, n]) => html`<li>Class "${k}" filtered ${n} nodes</li>`)}
      ${Object.entries(m.ConstraintFiltered || {}).map(([k, n]) => html`<li>Constraint "${k}": ${n} nodes excluded by filter</li>`)}
      ${Object.entries(m.ClassExhausted || {}).map(([k, n]) => html`<li>Class "${k}" exhausted on ${n} nodes</li>`)}
      ${Object.entries(m.DimensionExhausted || {}).map(([k, n]) => html`<li>Dimension "${k}" exhausted on ${n} nodes</li>`)}
      ${(m.QuotaExhausted || []).map((q) => html`<li>Quota limit hit "${q}"</li>`)}
    </ul></div>`)}`;
}

// explain renders Drover's placement explain: filters by how many nodes
// each removed, then the ranked nodes with each ranker's score.
export function explain(e) {
  const groups = Object.entries((e && e.TaskGroups) || {});
  if (!groups.length) return '';
  return html`<h2>Placement explain</h2>${groups.map(([g, x]) => {
    const rankers = [...new Set((x.Nodes || []).flatMap((n) => Object.keys(n.Scores || {})))].sort();
    return html`<div class="panel"><strong>${g}</strong>: ${x.NodesEvaluated} nodes evaluated, ${x.NodesScored} ranked
      ${Object.keys(x.Filtered || {}).length ? html`<ul>${Object.entries(x.Filtered).map(([k, n]) => html`<li>filtered by ${k}: ${n}</li>`)}</ul>` : ''}
      ${Object.keys(x.Exhausted || {}).length ? html`<ul>${Object.entries(x.Exhausted).map(([k, n]) => html`<li>${k} exhausted: ${n}</li>`)}</ul>` : ''}
      ${(x.Nodes || []).length ? html`<table><thead><tr><th>Node</th>${rankers.map((r) => html`<th>${r}</th>`)}<th>Final</th><th>Placed</th></tr></thead><tbody>${(x.Nodes || []).slice(0, 20).map((n) => html`<tr><td>${n.NodeName || n.NodeID.slice(0, 8)}</td>${rankers.map((r) => html`<td>${n.Scores && n.Scores[r] !== undefined ? n.Scores[r].toFixed(3) : ''}</td>`)}<td>${(n.Final || 0).toFixed(3)}</td><td>${n.Placed || ''}</td></tr>`)}</tbody></table>` : ''}</div>`;
  })}`;
}

function annotations(a) {
  const ups = Object.entries((a && a.DesiredTGUpdates) || {});
  if (!ups.length) return '';
  return html`<table><thead><tr><th>Group</th><th>Place</th><th>Stop</th><th>In place</th><th>Destructive</th><th>Canary</th><th>Ignore</th></tr></thead><tbody>${ups.map(([g, u]) => html`<tr><td>${g}</td><td>${u.Place || 0}</td><td>${u.Stop || 0}</td><td>${u.InPlaceUpdate || 0}</td><td>${u.DestructiveUpdate || 0}</td><td>${u.Canary || 0}</td><td>${u.Ignore || 0}</td></tr>`)}</tbody></table>`;
}

// parse turns the editor's text into an api.Job: JSON as is (a bare job or
// {"Job": ...}), anything else through /v1/jobs/parse. A definition that
// names no namespace is the job of namespace (the page's job, whose source
// was submitted with ?namespace=): Canonicalize would put it in "default",
// so the plan and run of an edit made a new job there.
async function parse(text, namespace) {
  const t = text.trim();
  if (!t) throw new Error('The job definition is empty.');
  if (t.startsWith('{')) {
    const v = JSON.parse(t);
    const job = v.Job || v;
    if (namespace && !job.Namespace) job.Namespace = namespace;
    return { job, format: 'json' };
  }
  const job = await put('/v1/jobs/parse', { JobHCL: text, Canonicalize: true });
  if (namespace) {
    const plain = await put('/v1/jobs/parse', { JobHCL: text, Canonicalize: false });
    if (!plain.Namespace) job.Namespace = namespace;
  }
  return { job, format: 'hcl2' };
}

// editor mounts the edit → plan → run flow into the element with id
// root. onRun receives the registered job.
export function editor(ctx, root, source, { namespace, onRun } = {}) {
  set(root, html`
    <div id="plan-err"></div>
    <textarea class="code" id="jobsrc" spellcheck="false" aria-label="Job definition" placeholder="Paste a job in HCL or JSON">${source || ''}</textarea>
    <div class="filters" style="margin-top:8px"><button class="primary" data-act="plan" data-err="plan-err" id="planbtn" data-cap="submit-job" data-ns="${namespace || '*'}">Plan</button><button data-act="cancelplan" id="cancelplan" hidden>Edit again</button><span class="muted" data-cap-note="submit-job" data-ns="${namespace || '*'}"></span></div>
    <div id="planout"></div>`);
  let planned = null;
  ctx.on('plan', async () => {
    set('plan-err', '');
    const text = document.getElementById('jobsrc').value;
    const { job, format } = await parse(text, namespace);
    const res = await put(`/v1/job/${encodeURIComponent(job.ID)}/plan`, { Job: job, Diff: true, Explain: true, Namespace: job.Namespace });
    planned = { job, format, text };
    document.getElementById('jobsrc').readOnly = true;
    document.getElementById('cancelplan').hidden = false;
    const failed = res.FailedTGAllocs && Object.keys(res.FailedTGAllocs).length;
    set('planout', html`<h2>Plan for "${job.ID}"</h2>
      ${res.Warnings ? html`<div class="notice">${res.Warnings}</div>` : ''}
      ${annotations(res.Annotations)}
      ${diff(res.Diff)}
      ${failed ? html`<h2>Placement failures</h2>${failures(res.FailedTGAllocs)}` : ''}
      ${explain(res.Explain)}
      <div class="filters" style="margin-top:10px"><button class="primary" data-act="run" data-err="plan-err" id="runbtn" data-cap="submit-job" data-ns="${job.Namespace || 'default'}">Run</button>${failed ? html`<span class="muted">The plan could not place everything; running creates a blocked evaluation that places it once capacity appears.</span>` : ''}</div>`);
  });
  ctx.on('cancelplan', () => {
    planned = null;
    document.getElementById('jobsrc').readOnly = false;
    document.getElementById('cancelplan').hidden = true;
    set('planout', '');
  });
  ctx.on('run', async () => {
    if (!planned) return;
    const body = { Job: planned.job, Submission: { Source: planned.text, Format: planned.format } };
    await req('PUT', '/v1/jobs', body);
    if (onRun) onRun(planned.job);
    else ctx.navigate(jobHref(planned.job.ID, planned.job.Namespace));
  });
}
