//! `Text`: a shared, interned string for the values thousands of pods repeat.
//!
//! Why: at 100,000 executors most of a projected pod's text is the same few values over and
//! over (namespace, label keys and values, the owner, node and image names, condition types
//! and reasons, container names, quantities). As owned `String`s that was about 2 KB of
//! heap per pod; interned, each distinct value is held once and a pod holds 8-byte
//! handles. Values no other pod shares (a termination message) cost one table entry more
//! than a `String`; the table drops a value when its last handle goes, so a long session
//! does not accumulate the values of pods long gone.
//!
//! The interner is `internment`'s `ArcIntern` (reference-counted, a sharded concurrent
//! table): maintained, and doing exactly this. `Text` wraps it so that hashing and
//! ordering follow the string (a `Text` is a `Borrow<str>` key in maps, looked up by
//! `&str`), while equality stays a pointer comparison (equal values share one pointer).
//!
//! It interns `String`s, not `str`s: a handle is then one pointer wide and `Option<Text>`
//! too (a `str` handle is two, the length beside the pointer). A pod holds some sixty of
//! them (its labels two apiece, each condition four, each container's names, image and
//! quantities), 8 bytes saved apiece: about 48 MB at 100,000 executors. The price: a lookup copies
//! the value into a `String` first (internment finds a `String` by value), a small
//! allocation freed at once when the value is already held.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

use internment::ArcIntern;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An interned string: cheap to clone, compared by pointer, read as a `&str`.
#[derive(Clone, PartialEq, Eq)]
pub struct Text(ArcIntern<String>);

impl Text {
    /// The shared handle for this value (interning it on first use).
    pub fn new(s: &str) -> Self {
        Self(ArcIntern::from_ref(s))
    }

    /// The value.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

/// By value, so that it agrees with `Borrow<str>` (a map keyed by `Text` is read by `&str`).
impl Hash for Text {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Default for Text {
    fn default() -> Self {
        Self::new("")
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Self {
        Self::new(s)
    }
}

/// A new value is kept as given: without spare room (a no-op when it has none).
impl From<String> for Text {
    fn from(mut s: String) -> Self {
        s.shrink_to_fit();
        Self(ArcIntern::new(s))
    }
}

impl From<Text> for String {
    fn from(t: Text) -> Self {
        t.as_str().to_owned()
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<Text> for str {
    fn eq(&self, other: &Text) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Text> for &str {
    fn eq(&self, other: &Text) -> bool {
        *self == other.as_str()
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        self == other.as_str()
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self)
    }
}

/// Reads a string into the `String` the table looks up (and keeps, when it is new).
impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self::from)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use super::*;

    #[test]
    fn equal_values_share_one_handle_and_read_as_str() {
        let a = Text::new("spark-kubernetes-executor");
        let b: Text = String::from("spark-kubernetes-executor").into();
        assert_eq!(a, b);
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
        assert_eq!(a, "spark-kubernetes-executor");
        assert_ne!(a, Text::new("spark-kubernetes-driver"));
        assert_eq!(Text::default(), "");
    }

    #[test]
    fn maps_keyed_by_text_are_read_by_str_in_string_order() {
        let mut m = BTreeMap::new();
        m.insert(Text::new("b"), 2);
        m.insert(Text::new("a"), 1);
        assert_eq!(m.get("a"), Some(&1));
        assert_eq!(m.keys().map(Text::as_str).collect::<Vec<_>>(), ["a", "b"]);
        let h: HashMap<Text, i32> = m.into_iter().collect();
        assert_eq!(h.get("b"), Some(&2));
    }

    #[test]
    fn a_handle_is_one_pointer_wide_and_so_is_an_absent_one() {
        assert_eq!(std::mem::size_of::<Text>(), std::mem::size_of::<usize>());
        assert_eq!(
            std::mem::size_of::<Option<Text>>(),
            std::mem::size_of::<usize>()
        );
    }

    #[test]
    fn json_round_trip_with_escapes() {
        let t: Text = serde_json::from_str(r#""a\"b\u00e9""#).expect("reads");
        assert_eq!(t, "a\"bé");
        assert_eq!(serde_json::to_string(&t).expect("writes"), r#""a\"bé""#);
        assert!(serde_json::from_str::<Text>("3").is_err());
    }
}
