//! Long strings of tool calls and blocks (terminal output, diffs, images)
//! carried by a drain apart from its JSON, as message text already is:
//! serialized into the JSON they were escaped by the core and scanned
//! again by the host's `JSON.parse`, on the host's thread, where apart
//! they are one copy. In the JSON each is `null`, and `$apart` lists
//! where each goes: a path of keys and indices from the drain's root
//! (`lib/session-view.js` puts them back, in order, after the message
//! texts).

use std::cell::RefCell;

use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use serde_json::Value;

/// Strings this long travel apart: below it, a path costs the host about
/// what the string's JSON does.
pub const APART_MIN_BYTES: usize = 1024;

/// One step of a path: an object's key or an array's index.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

impl Serialize for Seg<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Seg::Key(key) => s.serialize_str(key),
            Seg::Index(i) => s.serialize_u64(i as u64),
        }
    }
}

/// The strings one drain's serialization leaves out, and where they go.
#[derive(Debug, Default)]
pub(crate) struct Apart<'a> {
    /// Where the serialization is now (from the drain's root).
    path: RefCell<Vec<Seg<'a>>>,
    found: RefCell<Vec<(Vec<Seg<'a>>, &'a str)>>,
}

impl<'a> Apart<'a> {
    /// Run `f` one step further down the path.
    pub fn under<T>(&self, seg: Seg<'a>, f: impl FnOnce() -> T) -> T {
        self.path.borrow_mut().push(seg);
        let out = f();
        self.path.borrow_mut().pop();
        out
    }

    /// Run `f` some steps further down the path.
    pub fn under_all<T>(&self, segs: &[Seg<'a>], f: impl FnOnce() -> T) -> T {
        let mut path = self.path.borrow_mut();
        let depth = path.len();
        path.extend_from_slice(segs);
        drop(path);
        let out = f();
        self.path.borrow_mut().truncate(depth);
        out
    }

    /// Whether anything was left out.
    pub fn is_empty(&self) -> bool {
        self.found.borrow().is_empty()
    }

    /// The paths, in the order of the strings (`$apart`).
    pub fn paths(&self) -> Vec<Vec<Seg<'a>>> {
        self.found.borrow().iter().map(|(p, _)| p.clone()).collect()
    }

    /// The strings left out, in order.
    pub fn strings(&self) -> Vec<&'a str> {
        self.found.borrow().iter().map(|(_, s)| *s).collect()
    }
}

/// `value` serialized with its long strings left out into `apart` (when
/// given; else whole).
pub(crate) struct Walk<'c, 'a>(pub Option<&'c Apart<'a>>, pub &'a Value);

impl Serialize for Walk<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Walk(apart, value) = *self;
        let Some(apart) = apart else {
            return value.serialize(s);
        };
        match value {
            Value::String(text) if text.len() >= APART_MIN_BYTES => {
                let path = apart.path.borrow().clone();
                apart.found.borrow_mut().push((path, text));
                s.serialize_unit()
            }
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for (i, item) in items.iter().enumerate() {
                    apart.under(Seg::Index(i), || {
                        seq.serialize_element(&Walk(Some(apart), item))
                    })?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut m = s.serialize_map(Some(map.len()))?;
                for (key, item) in map {
                    apart.under(Seg::Key(key), || {
                        m.serialize_entry(key, &Walk(Some(apart), item))
                    })?;
                }
                m.end()
            }
            other => other.serialize(s),
        }
    }
}

/// Key-value pairs as a JSON object, each value a [`Walk`] one key down.
pub(crate) struct WalkFields<'c, 'a, I>(pub &'c Apart<'a>, pub I);

impl<'a, I> Serialize for WalkFields<'_, 'a, I>
where
    I: Iterator<Item = (&'a String, &'a Value)> + Clone,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let apart = self.0;
        let mut m = s.serialize_map(None)?;
        for (key, value) in self.1.clone() {
            apart.under(Seg::Key(key), || {
                m.serialize_entry(key, &Walk(Some(apart), value))
            })?;
        }
        m.end()
    }
}
