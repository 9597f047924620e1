// A small terminal screen for the exec page: it keeps the finished lines
// and the line under the cursor, and applies what a shell on a TTY writes:
// CR returns to column 0 (the following text overwrites), LF starts a new
// line, BS moves left (a shell erases with "\b \b" or "\b\x1b[K"), TAB
// goes to the next stop, and the CSI sequences a line editor uses (cursor
// left/right/column, erase in line, delete/insert characters, clear the
// screen). Colours and other escape sequences are dropped. Escape
// sequences and UTF-8 characters may be split across writes.

const maxLines = 2000;

export function createScreen() {
  let lines = [];   // finished lines
  let cur = [];     // the cursor's line, one character per cell
  let col = 0;
  let state = 'text'; // text | esc | csi | osc | oscEsc
  let params = '';
  const dec = new TextDecoder();

  const put = (ch) => {
    while (cur.length < col) cur.push(' ');
    cur[col++] = ch;
  };
  const newline = () => {
    lines.push(cur.join(''));
    if (lines.length > maxLines) lines = lines.slice(-maxLines);
    cur = [];
    col = 0;
  };
  const csi = (final) => {
    const ps = params.replace(/^[?>=]/, '').split(';').map((p) => parseInt(p, 10));
    const n = Number.isFinite(ps[0]) && ps[0] > 0 ? ps[0] : 1;
    const p0 = Number.isFinite(ps[0]) ? ps[0] : 0;
    switch (final) {
      case 'C': col += n; break;
      case 'D': col = Math.max(0, col - n); break;
      case 'G': col = n - 1; break;
      case 'H': case 'f': col = Number.isFinite(ps[1]) && ps[1] > 0 ? ps[1] - 1 : 0; break;
      case 'K':
        if (p0 === 0) cur.length = Math.min(cur.length, col);
        else if (p0 === 1) for (let i = 0; i <= col && i < cur.length; i++) cur[i] = ' ';
        else cur = [];
        break;
      case 'J':
        if (p0 === 2 || p0 === 3) { lines = []; cur = []; }
        else if (p0 === 0) cur.length = Math.min(cur.length, col);
        break;
      case 'P': cur.splice(col, n); break;
      case '@': if (col < cur.length) cur.splice(col, 0, ...' '.repeat(n)); break;
      case 'X': for (let i = col; i < col + n && i < cur.length; i++) cur[i] = ' '; break;
      default: break; // colours (m), modes (h/l) and the rest: nothing to show
    }
  };
  const feed = (s) => {
    for (const ch of s) {
      switch (state) {
        case 'esc':
          if (ch === '[') { state = 'csi'; params = ''; } else if (ch === ']') state = 'osc';
          else state = 'text'; // a two-character sequence (ESC =, ESC 7, ...)
          continue;
        case 'csi':
          if (ch >= '@' && ch <= '~') { csi(ch); state = 'text'; } else params += ch;
          continue;
        case 'osc':
          if (ch === '\x07') state = 'text'; else if (ch === '\x1b') state = 'oscEsc';
          continue;
        case 'oscEsc':
          state = ch === '\\' ? 'text' : 'osc';
          continue;
        default:
          break;
      }
      if (ch === '\x1b') state = 'esc';
      else if (ch === '\r') col = 0;
      else if (ch === '\n') newline();
      else if (ch === '\b') col = Math.max(0, col - 1);
      else if (ch === '\t') col = (Math.floor(col / 8) + 1) * 8;
      else if (ch < ' ' || ch === '\x7f') { /* BEL and other controls */ }
      else put(ch);
    }
  };
  return {
    // write takes the bytes of an output frame.
    write(bytes) { feed(dec.decode(bytes, { stream: true })); },
    // text is the screen's content with a block cursor at its place.
    text() {
      const line = cur.slice();
      while (line.length <= col) line.push(' ');
      line[col] = '█';
      return lines.concat([line.join('').replace(/ +$/, '')]).join('\n');
    },
  };
}
