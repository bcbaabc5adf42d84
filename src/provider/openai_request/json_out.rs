//! Small building blocks for serialising request bodies straight from borrowed messages: an
//! insertion-ordered field list with the replace-in-place semantics of the `serde_json::Map`
//! the bodies used to be built in (so even colliding dynamic keys come out the same), and text
//! joined while it is written instead of into a new `String`.

use std::fmt::{self, Display, Write as _};

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::agent::message::ContentBlock;

/// A JSON object under construction: keys in insertion order, a repeated key replaces the
/// earlier value where it stands (as `Map::insert` with `preserve_order` does).
pub struct Fields<'k, V> {
    entries: Vec<(&'k str, V)>,
}

impl<'k, V> Fields<'k, V> {
    pub fn with_capacity(n: usize) -> Self {
        Fields {
            entries: Vec::with_capacity(n),
        }
    }

    pub fn insert(&mut self, key: &'k str, value: V) {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.entries.push((key, value)),
        }
    }

    pub fn contains(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| *k == key)
    }
}

impl<V: Serialize> Fields<'_, V> {
    /// The object's compact JSON text, exactly as `serde_json::to_string` would write it, except
    /// that a value for which `raw` gives a text is written as that (already serialised) text.
    pub fn to_json_with(
        &self,
        raw: impl for<'v> Fn(&'v V) -> Option<&'v str>,
    ) -> Result<String, serde_json::Error> {
        let raw_len: usize = self
            .entries
            .iter()
            .filter_map(|(_, v)| raw(v))
            .map(str::len)
            .sum();
        let mut out = String::with_capacity(raw_len + 1024);
        out.push('{');
        for (i, (key, value)) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(key)?);
            out.push(':');
            match raw(value) {
                Some(text) => out.push_str(text),
                None => out.push_str(&serde_json::to_string(value)?),
            }
        }
        out.push('}');
        Ok(out)
    }
}

impl<V: Serialize> Serialize for Fields<'_, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.entries.len()))?;
        for (key, value) in &self.entries {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Which blocks of a content list a [`Joined`] text takes.
#[derive(Clone, Copy)]
pub enum Pick {
    /// Every text block (empty ones too).
    Text,
    /// Every thinking block with non-empty thinking.
    Thinking,
}

/// The picked blocks' texts joined by `sep`, written (and JSON-escaped) on the fly.
#[derive(Clone, Copy)]
pub struct Joined<'a> {
    pub blocks: &'a [ContentBlock],
    pub pick: Pick,
    pub sep: &'static str,
}

impl<'a> Joined<'a> {
    pub fn parts(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        let pick = self.pick;
        self.blocks.iter().filter_map(move |b| match (pick, b) {
            (Pick::Text, ContentBlock::Text(t)) => Some(t.text.as_str()),
            (Pick::Thinking, ContentBlock::Thinking(t)) if !t.thinking.is_empty() => {
                Some(t.thinking.as_str())
            }
            _ => None,
        })
    }

    /// No part at all.
    pub fn is_none(&self) -> bool {
        self.parts().next().is_none()
    }

    /// The joined text would be empty.
    pub fn is_empty(&self) -> bool {
        self.parts().all(str::is_empty) && (self.sep.is_empty() || self.parts().nth(1).is_none())
    }

    /// The joined text would be whitespace only (separators are whitespace or empty).
    pub fn is_blank(&self) -> bool {
        self.parts().all(|p| p.trim().is_empty())
    }
}

impl Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, part) in self.parts().enumerate() {
            if i > 0 {
                f.write_str(self.sep)?;
            }
            f.write_str(part)?;
        }
        Ok(())
    }
}

impl Serialize for Joined<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A JSON value written as the string of its compact JSON text (tool-call arguments).
pub struct JsonText<'a>(pub &'a serde_json::Value);

impl Serialize for JsonText<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self.0)
    }
}

/// `data:<mime>;base64,<data>` without copying the (large) image data first.
pub struct DataUrl<'a> {
    pub mime: &'a str,
    pub data: &'a str,
}

impl Display for DataUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("data:")?;
        f.write_str(self.mime)?;
        f.write_str(";base64,")?;
        f.write_str(self.data)
    }
}

impl Serialize for DataUrl<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Writes into a `String` (for the rare bodies that need a joined text as an owned value).
pub fn to_text(value: &impl Display) -> String {
    let mut out = String::new();
    let _ = write!(out, "{value}");
    out
}
