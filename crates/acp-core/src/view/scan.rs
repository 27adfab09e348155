//! The live view's hot path: one byte-level pass over a whole line that is
//! a `session/update` notification carrying a plain-text message chunk,
//! the shape an agent streams by the hundred thousand. It reads what the
//! envelope classifier and the fold would (method, params, session id,
//! variant, message id, text) without a JSON tree or a second parse.
//!
//! It accepts only a strict subset of JSON, and answers `None` for
//! anything else: then the line takes the general path (classify, then
//! fold), so the result is the same either way. Falls back on: any key not
//! listed below, a duplicate key, an escape in a key or in `method`,
//! `sessionUpdate` or `type`, a control character in a string, any value
//! of another type, trailing text. An escape in `sessionId`, `messageId`
//! or `text` is decoded as serde_json decodes it (`unescape`; a string it
//! refuses, such as a lone surrogate, falls back too). Whitespace between
//! tokens is JSON's.
//!
//! Accepted: `{"jsonrpc": "<no escapes>", "method": "session/update",
//! "params": {"sessionId": S, "update": {"sessionUpdate": V,
//! "messageId": S|null, "content": {"type": "text", "text": S}}}}`, keys in
//! any order, `jsonrpc` and `messageId` optional, `V` one of the three
//! message chunk variants.

use std::borrow::Cow;

use super::state::EntryKind;
use super::unescape::unescape;

/// A text chunk line, read in one pass (slices borrow the line).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TextLine<'a> {
    pub kind: EntryKind,
    pub text: Cow<'a, str>,
    /// The text as sent (between its quotes, escapes kept): a byte span
    /// of the line. The line is its bytes before, these, and its bytes
    /// after.
    pub raw: (usize, usize),
    /// Lines with the same number here have the same bytes before and
    /// after their text (those of a remembered shape): the same method,
    /// session, kind and message. `None`: not known.
    pub shape: Option<u64>,
    line: &'a str,
    /// The rest, read when asked for: a flood's next line of the same
    /// shape needs none of it (slicing it out was a twelfth of the
    /// reader's time).
    parts: Parts<'a>,
}

#[derive(Debug, PartialEq, Eq)]
enum Parts<'a> {
    /// As the scanner read them.
    Read {
        method: &'a str,
        params: &'a str,
        session_id: Cow<'a, str>,
        message_id: Option<Cow<'a, str>>,
    },
    /// At the places of a remembered shape.
    Placed {
        method: Span,
        params: (usize, usize),
        session_id: Span,
        message_id: Option<Span>,
    },
}

impl<'a> TextLine<'a> {
    /// The `method` string's contents, as a slice of the line.
    pub fn method(&self) -> &'a str {
        match self.parts {
            Parts::Read { method, .. } => method,
            Parts::Placed { method, .. } => method.get(self.line),
        }
    }

    /// The raw `params` object, as a slice of the line.
    pub fn params(&self) -> &'a str {
        match self.parts {
            Parts::Read { params, .. } => params,
            Parts::Placed { params, .. } => &self.line[params.0..self.line.len() - params.1],
        }
    }

    pub fn session_id(&self) -> &str {
        match &self.parts {
            Parts::Read { session_id, .. } => session_id,
            Parts::Placed { session_id, .. } => session_id.get(self.line),
        }
    }

    pub fn message_id(&self) -> Option<&str> {
        match &self.parts {
            Parts::Read { message_id, .. } => message_id.as_deref(),
            Parts::Placed { message_id, .. } => message_id.map(|id| id.get(self.line)),
        }
    }
}

/// Read `line` if it is exactly a plain-text chunk notification. `shape`
/// remembers where the parts of the last line read were: a flood repeats
/// one shape, so a line with the same bytes before and after its text is
/// read by comparing those bytes and scanning the text alone.
pub(crate) fn scan_text_line<'a>(line: &'a str, shape: &mut Shape) -> Option<TextLine<'a>> {
    if let Some(read) = shape.read(line) {
        return Some(read);
    }
    let mut s = Scanner::new(line);
    let mut method = None;
    let mut params = None;
    s.object(&[r#""jsonrpc""#, r#""method""#, r#""params""#], |s, key| {
        match key {
            0 | 1 => {
                if let Some((start, end)) = s.update_envelope(key)? {
                    s.marks.method = (start, end);
                    method = Some(&s.src[start..end]);
                }
            }
            _ => {
                let start = s.at;
                let fields = s.params()?;
                s.marks.params = (start, s.at);
                params = Some((&s.src[start..s.at], fields));
            }
        }
        Some(())
    })?;
    s.ws();
    if s.at != s.b.len() {
        return None;
    }
    let (params, (session_id, kind, message_id, text)) = params?;
    let method = method?;
    shape.remember(line, &s.marks, kind);
    Some(TextLine {
        kind,
        text,
        raw: (s.marks.text.0 + 1, s.marks.text.1),
        // Remembered from this line: its bytes around the text.
        shape: shape.kind.is_some().then_some(shape.generation),
        line,
        parts: Parts::Read {
            method,
            params,
            session_id,
            message_id,
        },
    })
}

/// Where a part of a line is: before its text (from the start) or after
/// it (counted back from the end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Span {
    #[default]
    None,
    Head(usize, usize),
    Tail(usize, usize),
}

impl Span {
    /// `(start, end)` of a line of `len` bytes read with `open`/`close`
    /// the text's quotes; `None` when it straddles the text.
    fn of((start, end): (usize, usize), open: usize, close: usize, len: usize) -> Option<Self> {
        if end <= open {
            Some(Span::Head(start, end))
        } else if start > close {
            Some(Span::Tail(len - start, len - end))
        } else {
            None
        }
    }

    fn get(self, line: &str) -> &str {
        match self {
            Span::None => "",
            Span::Head(start, end) => &line[start..end],
            Span::Tail(start, end) => &line[line.len() - start..line.len() - end],
        }
    }
}

/// The most bytes around a text a [`Shape`] keeps (real envelopes: ~150).
const MAX_SHAPE_BYTES: usize = 4096;

/// The shape of the last line read (see [`scan_text_line`]).
#[derive(Debug, Default)]
pub(crate) struct Shape {
    /// The line up to its text's opening quote, included.
    head: Vec<u8>,
    /// The line from its text's closing quote on.
    tail: Vec<u8>,
    method: Span,
    /// Counts the shapes remembered (see [`TextLine::shape`]).
    generation: u64,
    /// `params` from its start to so many bytes before the end.
    params: (usize, usize),
    session_id: Span,
    /// `None`: absent or `null`.
    message_id: Option<Span>,
    kind: Option<EntryKind>,
}

impl Shape {
    /// Read `line` if it has the last line's bytes around its text. The
    /// scanner decides from the bytes before a token only, so on the same
    /// bytes it decides the same; the text, scanned, must end exactly where
    /// the known bytes after it begin.
    fn read<'a>(&self, line: &'a str) -> Option<TextLine<'a>> {
        let kind = self.kind?;
        let (head, tail) = (self.head.len(), self.tail.len());
        let b = line.as_bytes();
        if b.len() < head + tail || !b.starts_with(&self.head) || !b.ends_with(&self.tail) {
            return None;
        }
        // The text alone, without a scanner: the per-line cost of setting
        // one up (its marks) showed as a sixth of the reader's own time.
        let (start, end, escaped) = string_span_at(b, head - 1)?;
        if end != b.len() - tail {
            return None;
        }
        let text = decode(line, start, end, escaped)?;
        Some(TextLine {
            kind,
            text,
            raw: (start, end),
            shape: Some(self.generation),
            line,
            parts: Parts::Placed {
                method: self.method,
                params: self.params,
                session_id: self.session_id,
                message_id: self.message_id,
            },
        })
    }

    /// Remember the shape of `line`, just read (when its ids need no
    /// decoding: they are then slices of the next line too).
    fn remember(&mut self, line: &str, marks: &Marks, kind: EntryKind) {
        self.kind = None;
        self.generation += 1;
        let (open, close) = marks.text;
        let len = line.len();
        let span = |at| Span::of(at, open, close, len);
        let (Some(method), Some(session_id), false) = (
            span(marks.method),
            span(marks.session_id.0),
            marks.session_id.1,
        ) else {
            return;
        };
        let message_id = match marks.message_id {
            None => None,
            Some((_, true)) => return,
            Some((at, false)) => match span(at) {
                Some(id) => Some(id),
                None => return,
            },
        };
        if open + 1 + (len - close) > MAX_SHAPE_BYTES {
            // An agent-sized envelope (an 8 MiB session id): not worth
            // remembering, and the buffers would keep its size for good.
            self.head = Vec::new();
            self.tail = Vec::new();
            return;
        }
        self.head.clear();
        self.head.extend_from_slice(&line.as_bytes()[..=open]);
        self.tail.clear();
        self.tail.extend_from_slice(&line.as_bytes()[close..]);
        self.method = method;
        self.params = (marks.params.0, len - marks.params.1);
        self.session_id = session_id;
        self.message_id = message_id;
        self.kind = Some(kind);
    }
}

/// Where the scanner found the parts of a line (byte offsets; ids with
/// whether they had escapes).
#[derive(Debug, Default)]
struct Marks {
    method: (usize, usize),
    params: (usize, usize),
    session_id: ((usize, usize), bool),
    message_id: Option<((usize, usize), bool)>,
    /// The text's opening and closing quotes.
    text: (usize, usize),
}

type Fields<'a> = (Cow<'a, str>, EntryKind, Option<Cow<'a, str>>, Cow<'a, str>);

pub(super) struct Scanner<'a> {
    src: &'a str,
    b: &'a [u8],
    pub(super) at: usize,
    marks: Marks,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` that is `"`, `\` or a control
/// character. The lowest one set is exact (a borrow only runs upward), so
/// `trailing_zeros() / 8` is the first such byte of 8 read little-endian.
#[inline]
fn special_bytes(x: u64) -> u64 {
    let quote = x ^ (ONES * u64::from(b'"'));
    let backslash = x ^ (ONES * u64::from(b'\\'));
    let zero = |v: u64| v.wrapping_sub(ONES) & !v;
    (zero(quote) | zero(backslash) | (x.wrapping_sub(ONES * 0x20) & !x)) & HIGHS
}

/// The JSON string whose opening quote is at `at`: its contents' span
/// (quotes excluded) and whether it has escapes.
fn string_span_at(b: &[u8], at: usize) -> Option<(usize, usize, bool)> {
    if b.get(at) != Some(&b'"') {
        return None;
    }
    let start = at + 1;
    let mut i = start;
    let mut escaped = false;
    loop {
        // Eight bytes at a time to the next quote, backslash or control
        // character; the last few one by one.
        while let Some(word) = b.get(i..i + 8) {
            let hits = special_bytes(u64::from_le_bytes(word.try_into().expect("8 bytes")));
            if hits != 0 {
                i += (hits.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        match *b.get(i)? {
            b'"' => return Some((start, i, escaped)),
            // Skip the escaped byte: never a quote that ends the string.
            b'\\' => {
                escaped = true;
                i += 2;
            }
            // serde_json refuses raw control characters in strings.
            0..=0x1f => return None,
            _ => i += 1,
        }
    }
}

/// The string `src[start..end]` (contents of a JSON string) decoded
/// exactly as the general path would (and refused where it would refuse).
fn decode(src: &str, start: usize, end: usize, escaped: bool) -> Option<Cow<'_, str>> {
    if !escaped {
        return Some(Cow::Borrowed(&src[start..end]));
    }
    unescape(&src[start..end]).map(Cow::Owned)
}

impl<'a> Scanner<'a> {
    /// A `session/update` envelope's member `key` at the cursor: 0,
    /// `jsonrpc` (any string without escapes: the classifier does not look
    /// at it); 1, `method`, which must be `"session/update"`. For the
    /// method, where its text is.
    pub(super) fn update_envelope(&mut self, key: usize) -> Option<Option<(usize, usize)>> {
        if key == 0 {
            if !self.literal(r#""2.0""#) {
                self.plain_string()?;
            }
            return Some(None);
        }
        let start = self.at + 1;
        if !self.literal(r#""session/update""#) {
            return None;
        }
        Some(Some((start, self.at - 1)))
    }

    /// A scanner at the start of `src`.
    pub(super) fn new(src: &'a str) -> Self {
        Scanner {
            src,
            b: src.as_bytes(),
            at: 0,
            marks: Marks::default(),
        }
    }

    /// Skip JSON whitespace.
    pub(super) fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.at) {
            self.at += 1;
        }
    }

    pub(super) fn eat(&mut self, byte: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    /// The exact text `lit` at the cursor (then skipped)?
    #[inline]
    pub(super) fn literal(&mut self, lit: &str) -> bool {
        let hit = self.b[self.at..].starts_with(lit.as_bytes());
        if hit {
            self.at += lit.len();
        }
        hit
    }

    /// A non-empty object whose keys are among `keys` (JSON strings, quotes
    /// included, so a key with an escape is none of them), each at most
    /// once: `value` reads the value of key `keys[i]` (or refuses the line).
    fn object(
        &mut self,
        keys: &[&str],
        mut value: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        let mut seen = 0u32;
        loop {
            self.ws();
            let key = keys.iter().position(|k| self.literal(k))?;
            if seen & (1 << key) != 0 {
                return None;
            }
            seen |= 1 << key;
            self.eat(b':')?;
            self.ws();
            value(self, key)?;
            self.ws();
            match self.b.get(self.at)? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string at the cursor: its contents' span and whether it has escapes.
    fn string_span(&mut self) -> Option<(usize, usize, bool)> {
        let span = string_span_at(self.b, self.at)?;
        self.at = span.1 + 1;
        Some(span)
    }

    /// A string without escapes, borrowed.
    pub(super) fn plain_string(&mut self) -> Option<&'a str> {
        match self.string_span()? {
            (start, end, false) => Some(&self.src[start..end]),
            _ => None,
        }
    }

    /// A string, decoded: escapes by serde_json itself, so exactly as the
    /// general path would (and refused where it would refuse).
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let (start, end, escaped) = self.string_span()?;
        decode(self.src, start, end, escaped)
    }

    fn params(&mut self) -> Option<Fields<'a>> {
        let mut session_id = None;
        let mut update = None;
        self.object(&[r#""sessionId""#, r#""update""#], |s, key| {
            match key {
                0 => {
                    let start = s.at + 1;
                    let id = s.string()?;
                    s.marks.session_id = ((start, s.at - 1), matches!(id, Cow::Owned(_)));
                    session_id = Some(id);
                }
                _ => update = Some(s.update()?),
            }
            Some(())
        })?;
        let (kind, message_id, text) = update?;
        Some((session_id?, kind, message_id, text))
    }

    #[allow(clippy::type_complexity)]
    fn update(&mut self) -> Option<(EntryKind, Option<Cow<'a, str>>, Cow<'a, str>)> {
        let mut kind = None;
        let mut message_id = None;
        let mut text = None;
        let keys = [r#""sessionUpdate""#, r#""messageId""#, r#""content""#];
        self.object(&keys, |s, key| {
            match key {
                0 => {
                    kind = Some(if s.literal(r#""agent_message_chunk""#) {
                        EntryKind::Agent
                    } else if s.literal(r#""agent_thought_chunk""#) {
                        EntryKind::Thought
                    } else if s.literal(r#""user_message_chunk""#) {
                        EntryKind::User
                    } else {
                        return None;
                    })
                }
                1 => {
                    message_id = Some(if s.literal("null") {
                        None
                    } else {
                        let start = s.at + 1;
                        let id = s.string()?;
                        s.marks.message_id = Some(((start, s.at - 1), matches!(id, Cow::Owned(_))));
                        Some(id)
                    })
                }
                _ => text = Some(s.text_block()?),
            }
            Some(())
        })?;
        Some((kind?, message_id.flatten(), text?))
    }

    /// `{"type": "text", "text": S}` and nothing else: the text.
    fn text_block(&mut self) -> Option<Cow<'a, str>> {
        let mut typed = false;
        let mut text = None;
        self.object(&[r#""type""#, r#""text""#], |s, key| {
            match key {
                0 => {
                    if !s.literal(r#""text""#) {
                        return None;
                    }
                    typed = true;
                }
                _ => {
                    let open = s.at;
                    text = Some(s.string()?);
                    s.marks.text = (open, s.at - 1);
                }
            }
            Some(())
        })?;
        typed.then_some(())?;
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::methods;
    use crate::rpc::{self, Inbound};
    use crate::view::TextParams;

    /// What the general path reads from the same line: classify, then the
    /// typed params; `None` where it would not fold a text chunk.
    fn general(line: &str) -> Option<(String, String, EntryKind, Option<String>, String)> {
        let Inbound::Notification { method, params } = rpc::classify(line.as_bytes()) else {
            return None;
        };
        if method != methods::SESSION_UPDATE {
            return None;
        }
        let params = params?.get();
        let p = serde_json::from_str::<TextParams<'_>>(params).ok()?;
        let kind = p.update.entry_kind()?;
        let (message_id, text) = p.update.parts();
        Some((
            params.to_string(),
            p.session_id.into_owned(),
            kind,
            message_id.map(str::to_owned),
            text.to_string(),
        ))
    }

    /// The fast path, both ways: read whole, then by the shape it left.
    fn fast(line: &str) -> Option<(String, String, EntryKind, Option<String>, String)> {
        let mut shape = Shape::default();
        let whole = scan_text_line(line, &mut shape).map(|t| owned(raw_checked(line, t)));
        if let Some(again) = shape.read(line) {
            assert_eq!(
                Some(owned(raw_checked(line, again))),
                whole,
                "by shape: {line}"
            );
        }
        whole
    }

    /// `t.raw` is the text as sent: between quotes, and it decodes to the text.
    fn raw_checked<'a>(line: &str, t: TextLine<'a>) -> TextLine<'a> {
        let (start, end) = t.raw;
        assert_eq!(&line[start - 1..start], "\"", "{line}");
        assert_eq!(&line[end..=end], "\"", "{line}");
        let decoded: String = serde_json::from_str(&line[start - 1..=end]).unwrap();
        assert_eq!(decoded, t.text, "{line}");
        t
    }

    fn owned(t: TextLine<'_>) -> (String, String, EntryKind, Option<String>, String) {
        assert_eq!(t.method(), methods::SESSION_UPDATE);
        (
            t.params().to_string(),
            t.session_id().to_string(),
            t.kind,
            t.message_id().map(str::to_owned),
            t.text.into_owned(),
        )
    }

    fn line(update: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{update}}}}}"#
        )
    }

    /// Lines the fast path must read, each exactly as the general path.
    #[test]
    fn accepted_lines_read_exactly_as_the_general_path() {
        let accepted = [
            line(r#"{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"hello"}}"#),
            line(r#"{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":""}}"#),
            line(r#"{"sessionUpdate":"user_message_chunk","messageId":null,"content":{"type":"text","text":"x"}}"#),
            // Keys in another order, whitespace everywhere JSON allows it.
            " { \"params\" : {\"update\":{ \"content\":{\"text\":\"a b\" ,\"type\":\"text\"},\"sessionUpdate\":\"agent_message_chunk\"},\"sessionId\":\"s\"} ,\r\n\t\"method\":\"session/update\" } \t".to_string(),
            // No jsonrpc member (the classifier does not require it).
            r#"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}}}"#.to_string(),
            // Escapes in the text: every simple one, unicode, a surrogate pair.
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"q\"b\\s\/n\nr\rt\tb\bf\f"}}"#),
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\u00e9\u4e2d\ud83d\ude00\u0000"}}"#),
            // Raw UTF-8 in the text and ids; escapes in the ids.
            line(r#"{"sessionUpdate":"agent_message_chunk","messageId":"m\u00e9","content":{"type":"text","text":"中文 😀 é"}}"#),
            r#"{"method":"session/update","params":{"sessionId":"s\"1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}}}"#.to_string(),
            // Long texts (searched a block at a time), escapes past the first block.
            line(&format!(r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{}"}}}}"#, "x".repeat(300))),
            line(&format!(r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{}\n\"{}\u00e9"}}}}"#, "y".repeat(100), "z".repeat(63))),
            // A backslash just before the closing quote.
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"end\\"}}"#),
        ];
        for l in &accepted {
            let g = general(l);
            assert!(g.is_some(), "the general path folds {l}");
            assert_eq!(fast(l), g, "{l}");
        }
    }

    /// Lines the fast path must leave to the general path (which may fold
    /// them differently, refuse them, or read them as something else).
    #[test]
    fn anything_else_falls_back() {
        let refused = [
            // Duplicate keys, at every level.
            r#"{"method":"session/update","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}}}"#.to_string(),
            r#"{"jsonrpc":"2.0","jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}}}"#.to_string(),
            r#"{"method":"session/update","params":{"sessionId":"s","sessionId":"t","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}}}"#.to_string(),
            line(r#"{"sessionUpdate":"agent_message_chunk","sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}"#),
            line(r#"{"sessionUpdate":"agent_message_chunk","messageId":"a","messageId":"b","content":{"type":"text","text":"t"}}"#),
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"e","text":"f"}}"#),
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","type":"text","text":"f"}}"#),
            // Unknown fields, at every level.
            r#"{"id":1,"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}}}"#.to_string(),
            r#"{"method":"session/update","params":{"sessionId":"s","_meta":{},"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}}}"#.to_string(),
            line(r#"{"sessionUpdate":"agent_message_chunk","_meta":{"a":1},"content":{"type":"text","text":"t"}}"#),
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t","annotations":null}}"#),
            // Other variants and blocks, missing members, other types.
            line(r#"{"sessionUpdate":"tool_call","toolCallId":"c"}"#),
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":""}}"#),
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"text":"t"}}"#),
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}"#),
            line(r#"{"sessionUpdate":"agent_message_chunk"}"#),
            line(r#"{"sessionUpdate":"agent_message_chunk","messageId":7,"content":{"type":"text","text":"t"}}"#),
            line(r#"{"sessionUpdate":"agent_message_chunk","messageId":nul,"content":{"type":"text","text":"t"}}"#),
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":5}}"#),
            r#"{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}}}"#.to_string(),
            r#"{"method":"session/update","params":{"sessionId":"s"}}"#.to_string(),
            r#"{"jsonrpc":2,"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}}}"#.to_string(),
            // Escapes where the fast path reads plain strings only.
            r#"{"method":"session\/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}}}"#.to_string(),
            r#"{"m\u0065thod":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}}}"#.to_string(),
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"t\u0065xt","text":"t"}}"#),
            // Strings serde_json refuses: a lone surrogate, a raw control
            // character, a bad escape.
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\ud800"}}"#),
            line("{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"a\u{1}b\"}}"),
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\x"}}"#),
            line(&format!(r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{}{}"}}}}"#, "w".repeat(200), '\u{2}')),
            line(&format!(r#"{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{}"#, "v".repeat(200))),
            // Other methods, trailing text, truncation, empty objects.
            r#"{"method":"session/updates","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}}}"#.to_string(),
            format!("{} x", line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}"#)),
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}"#).trim_end_matches('}').to_string(),
            r#"{"method":"session/update","params":{}}"#.to_string(),
            "{}".to_string(),
            String::new(),
        ];
        for l in &refused {
            assert_eq!(fast(l), None, "{l}");
        }
    }

    /// Random lines near the accepted shape (key orders, optional and
    /// extra keys, duplicates, whitespace, escapes, odd characters): the
    /// fast path reads each either exactly as the general path or not at all.
    #[test]
    fn random_lines_are_read_as_the_general_path_or_left_to_it() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let pieces = [
            "a",
            " ",
            "é",
            "中",
            "😀",
            "\\n",
            "\\\"",
            "\\\\",
            "\\/",
            "\\u00e9",
            "\\ud83d\\ude00",
            "\\ud800",
            "\\u0041",
            "\\t",
            "\u{7f}",
            "\\x",
            "\u{1}",
            "\"",
            "\\",
        ];
        let mut read = 0;
        let mut shape = Shape::default();
        for _ in 0..20_000 {
            let string = |next: &mut dyn FnMut(usize) -> usize| {
                let mut s = String::from("\"");
                let long = next(4) == 0;
                for _ in 0..next(if long { 80 } else { 6 }) {
                    s.push_str(pieces[next(pieces.len())]);
                }
                s.push('"');
                s
            };
            let ws = |next: &mut dyn FnMut(usize) -> usize| [" ", "", "\n", "\t "][next(4)];
            let obj = |members: &mut Vec<String>, next: &mut dyn FnMut(usize) -> usize| {
                // Shuffle, sometimes duplicate or drop one.
                for i in (1..members.len()).rev() {
                    members.swap(i, next(i + 1));
                }
                if next(20) == 0 {
                    let m = members[0].clone();
                    members.push(m);
                }
                if next(20) == 0 {
                    members.pop();
                }
                let sep = format!("{},{}", ws(next), ws(next));
                format!("{{{}{}{}}}", ws(next), members.join(&sep), ws(next))
            };
            let mut block = vec![
                r#""type":"text""#.to_string(),
                format!(r#""text":{}"#, string(&mut next)),
            ];
            if next(15) == 0 {
                block.push(r#""annotations":null"#.into());
            }
            let variant = [
                "agent_message_chunk",
                "user_message_chunk",
                "agent_thought_chunk",
                "plan",
            ][next(4)];
            let mut update = vec![
                format!(r#""sessionUpdate":"{variant}""#),
                format!(r#""content":{}"#, obj(&mut block, &mut next)),
            ];
            match next(3) {
                0 => update.push(format!(r#""messageId":{}"#, string(&mut next))),
                1 => update.push(r#""messageId":null"#.into()),
                _ => {}
            }
            let mut params = vec![
                format!(r#""sessionId":{}"#, string(&mut next)),
                format!(r#""update":{}"#, obj(&mut update, &mut next)),
            ];
            let mut envelope = vec![
                r#""method":"session/update""#.to_string(),
                format!(r#""params":{}"#, obj(&mut params, &mut next)),
            ];
            if next(2) == 0 {
                envelope.push(r#""jsonrpc":"2.0""#.into());
            }
            if next(30) == 0 {
                envelope.push(r#""id":1"#.into());
            }
            let l = obj(&mut envelope, &mut next);
            let got = fast(&l);
            if got.is_some() {
                read += 1;
                assert_eq!(got, general(&l), "{l}");
            }
            // With the last lines' shapes in memory, too.
            if let Some(kept) = scan_text_line(&l, &mut shape).map(owned) {
                assert_eq!(Some(kept), general(&l), "{l}");
            }
        }
        assert!(read > 1000, "only {read} lines took the fast path");
    }

    /// Lines with the bytes of an accepted line around a new text: read by
    /// shape exactly as the general path reads them, or left to it.
    #[test]
    fn a_huge_envelope_is_read_but_its_shape_not_kept() {
        let mut shape = Shape::default();
        let sid = "s".repeat(8 << 20);
        let big = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"{sid}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"a"}}}}}}}}"#
        );
        assert_eq!(scan_text_line(&big, &mut shape).unwrap().text, "a");
        assert!(shape.kind.is_none(), "not remembered");
        assert!(shape.head.capacity() + shape.tail.capacity() <= MAX_SHAPE_BYTES);
        // A normal line after it is remembered as before.
        let small =
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"b"}}"#);
        assert_eq!(scan_text_line(&small, &mut shape).unwrap().text, "b");
        assert!(shape.kind.is_some());
    }

    #[test]
    fn a_line_of_the_last_shape_is_read_as_the_general_path() {
        let layouts = [
            line(r#"{"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"TEXT"}}"#),
            // The message id and the method after the text.
            r#"{"params":{"sessionId":"s","update":{"content":{"text":"TEXT","type":"text"},"messageId":"m","sessionUpdate":"agent_thought_chunk"}},"method":"session/update"}"#.to_string(),
            line(r#"{"sessionUpdate":"user_message_chunk","messageId":null,"content":{"type":"text","text":"TEXT"}}"#),
        ];
        let texts = [
            "plain",
            "",
            r#"with \"quotes\""#,
            r#"ends with \\"#,
            r#"\u00e9\ud83d\ude00"#,
            "中文",
            // Not a string that ends where the shape's does.
            r#"a\"#,
            r#"a\""#,
            r#"a\"}}}}"#,
            r#"\ud800"#,
            r#"\x"#,
            r#"a\u0001"#,
            r#"a\u000"#,
            r#"\"#,
        ];
        for layout in &layouts {
            let mut shape = Shape::default();
            let first = layout.replace("TEXT", "first");
            assert!(scan_text_line(&first, &mut shape).is_some(), "{first}");
            for text in texts {
                let l = layout.replace("TEXT", text);
                let by_shape = shape.read(&l).map(|t| owned(raw_checked(&l, t)));
                let g = general(&l);
                if by_shape.is_some() {
                    assert_eq!(by_shape, g, "{l}");
                }
                // And the scanner as a whole, with this shape in memory.
                let mut kept = Shape::default();
                scan_text_line(&first, &mut kept);
                assert_eq!(scan_text_line(&l, &mut kept).map(owned), g, "{l}");
            }
            // A raw control character or an unescaped quote in the text.
            for text in ["a\u{1}b", "a\"b"] {
                let l = layout.replace("TEXT", text);
                assert_eq!(shape.read(&l), None, "{l}");
            }
        }
    }

    #[test]
    fn the_params_slice_is_the_raw_params() {
        let l =
            line(r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"t"}}"#);
        let t = scan_text_line(&l, &mut Shape::default()).unwrap();
        let Inbound::Notification { params, .. } = rpc::classify(l.as_bytes()) else {
            panic!("a notification");
        };
        assert_eq!(t.params(), params.unwrap().get());
        // The method is borrowed from the line (the item copies its token).
        let base = l.as_ptr() as usize;
        assert!((base..base + l.len()).contains(&(t.method().as_ptr() as usize)));
    }
}
