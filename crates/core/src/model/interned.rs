//! `Text`: a shared, interned string for the values thousands of pods repeat.
//!
//! Why: at 100,000 executors most of a projected pod's text is the same few values over and
//! over (namespace, label keys and values, the owner, node and image names, condition types
//! and reasons, container names, quantities). As owned `String`s that was about 2 KB of
//! heap per pod; interned, each distinct value is held once and a pod holds 8-byte
//! handles. Values no other pod shares (a termination message) cost one table entry more
//! than a `String`; the table drops a value when its last handle goes (a short one may stay
//! at hand on a thread a while longer, below), so a long session does not accumulate the
//! values of pods long gone.
//!
//! The interner is `internment`'s `ArcIntern` (reference-counted, a sharded concurrent
//! table): maintained, and doing exactly this. `Text` wraps it so that hashing and
//! ordering follow the string (a `Text` is a `Borrow<str>` key in maps, looked up by
//! `&str`), while equality stays a pointer comparison (equal values share one pointer).
//!
//! It interns `String`s, not `str`s: a handle is then one pointer wide and `Option<Text>`
//! too (a `str` handle is two, the length beside the pointer). A pod holds some sixty of
//! them (its labels two apiece, each condition four, each container's names, image and
//! quantities), 8 bytes saved apiece: about 48 MB at 100,000 executors. The price: a value
//! not at hand on the thread (below) is copied into a `String` to be looked up (internment
//! finds a `String` by value), a small allocation freed at once when the value is held.
//!
//! In front of the shared table each thread keeps the short values it met lately (a set
//! found by a fast hash, cleared when full): the first view of 100,000 executors looks up
//! some six million values, nearly all repeats, and the shared table's path (a `String`
//! made, a shard locked, the table searched) was a fifth of the pods' decode. A value found
//! at hand costs one hash, one comparison and its count (still one every thread shares).
//! Long values (most messages) are never kept at hand: they seldom repeat. A short one is
//! held on a thread until the thread has met 16,384 other short values; it is held, as
//! every value is, only in memory.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::collections::HashSet;
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
        seen(s).unwrap_or_else(|| remember(Self(ArcIntern::from_ref(s))))
    }

    /// Kept at hand on a thread when met (see the module's note).
    fn short(s: &str) -> bool {
        s.len() <= SHORT
    }

    /// The value.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

/// How many values a thread keeps at hand (see the module's note): more than the distinct
/// values a run of pods repeats (executor ids, nodes, images, apps), few enough to be
/// small: 16,384 handles of values up to [`SHORT`] bytes, under 4 MB a thread with the
/// values themselves (most of them held by pods anyway) and the set's table.
const RECENT: usize = 16 * 1024;

/// The longest value kept at hand: names, ids, quantities, reasons and images (a registry
/// host, a path and a tag, or a `@sha256:` digest of 71 characters) fit.
const SHORT: usize = 128;

thread_local! {
    // Seeded per set: the values come from the cluster.
    static RECENT_TEXTS: RefCell<HashSet<Text, foldhash::fast::RandomState>> =
        RefCell::new(HashSet::default());
}

/// The handle this thread met lately for `s`, if any.
fn seen(s: &str) -> Option<Text> {
    if !Text::short(s) {
        return None;
    }
    RECENT_TEXTS.with_borrow(|set| set.get(s).cloned())
}

/// Keeps `t` at hand on this thread (forgetting all the others when the set is full).
fn remember(t: Text) -> Text {
    if !Text::short(&t) {
        return t;
    }
    RECENT_TEXTS.with_borrow_mut(|set| {
        if set.len() >= RECENT {
            set.clear();
        }
        set.insert(t.clone());
    });
    t
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
        if let Some(t) = seen(&s) {
            return t;
        }
        s.shrink_to_fit();
        remember(Self(ArcIntern::new(s)))
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

/// Reads a string as the reader hands it: a `&str` (serde_json's, escapes and all) is looked
/// up as it is, a `String` is made only for a value not at hand on this thread; an owned
/// `String` (from a `serde_json::Value`) is moved in.
impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_string(TextVisitor)
    }
}

struct TextVisitor;

impl serde::de::Visitor<'_> for TextVisitor {
    type Value = Text;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Text, E> {
        Ok(Text::new(v))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Text, E> {
        Ok(Text::from(v))
    }

    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Text, E> {
        std::str::from_utf8(v)
            .map(Text::new)
            .map_err(|_| E::invalid_value(serde::de::Unexpected::Bytes(v), &self))
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
    fn a_value_is_one_handle_across_threads_and_past_a_full_recent_set() {
        let here = Text::new("exec-7");
        let there = std::thread::spawn(|| serde_json::from_str::<Text>(r#""exec-7""#))
            .join()
            .expect("thread")
            .expect("reads");
        assert!(std::ptr::eq(here.as_str(), there.as_str()));
        // More distinct values than a thread keeps at hand: the set is cleared on the way,
        // and a value met before is still the one handle.
        let many: Vec<Text> = (0..RECENT + 10)
            .map(|i| Text::from(i.to_string()))
            .collect();
        assert!(std::ptr::eq(Text::new("exec-7").as_str(), here.as_str()));
        assert!(std::ptr::eq(Text::new("3").as_str(), many[3].as_str()));
        let (len, both) =
            RECENT_TEXTS.with_borrow(|s| (s.len(), s.contains("exec-7") && s.contains("3")));
        assert!(len < 100 && both, "{len} at hand");
        // A long value is interned but never kept at hand.
        let long = "x".repeat(SHORT + 1);
        assert!(std::ptr::eq(
            Text::new(&long).as_str(),
            Text::new(&long).as_str()
        ));
        assert!(!RECENT_TEXTS.with_borrow(|s| s.contains(long.as_str())));
    }

    #[test]
    fn every_way_a_reader_hands_a_string_reads_the_one_value() {
        let plain = Text::new("spark-kubernetes-executor");
        let owned: Text =
            serde_json::from_value(serde_json::json!("spark-kubernetes-executor")).expect("reads");
        let escaped: Text =
            serde_json::from_str(r#""spark-kubernetes-\u0065xecutor""#).expect("reads");
        let bytes: Text =
            serde::de::Deserialize::deserialize(serde::de::value::BytesDeserializer::<
                serde_json::Error,
            >::new(b"spark-kubernetes-executor"))
            .expect("reads");
        for t in [&owned, &escaped, &bytes] {
            assert!(std::ptr::eq(t.as_str(), plain.as_str()));
        }
        let err = serde_json::from_str::<Text>("3").expect_err("a number is no string");
        assert!(err.to_string().contains("expected a string"), "{err}");
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
