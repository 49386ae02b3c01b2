//! A pod's labels as one sorted slice: a `BTreeMap` of a Spark executor's dozen labels
//! (Spark's six, the operator's, the user's) took two or three nodes, about 1.2 KB a pod;
//! the slice is their size, 16 bytes a label (two interned handles). Read by key (a binary search), in key order.

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Text;

/// A pod's labels: each key once, in key order (as a `BTreeMap` would hold them).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Labels(Box<[(Text, Text)]>);

impl Labels {
    fn position(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Text> {
        self.position(key).ok().map(|i| &self.0[i].1)
    }

    /// Whether `key` is there.
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_ok()
    }

    /// Sets `key` to `value`; the value it had, if any (as `BTreeMap::insert`).
    pub fn insert(&mut self, key: Text, value: Text) -> Option<Text> {
        match self.position(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                let mut v = std::mem::take(&mut self.0).into_vec();
                v.insert(i, (key, value));
                self.0 = v.into_boxed_slice();
                None
            }
        }
    }

    /// The labels in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&Text, &Text)> {
        self.0.iter().map(|(k, v)| (k, v))
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A key given twice keeps its last value (as a JSON object read into a map does).
impl FromIterator<(Text, Text)> for Labels {
    fn from_iter<I: IntoIterator<Item = (Text, Text)>>(items: I) -> Self {
        let mut v: Vec<(Text, Text)> = items.into_iter().collect();
        // Stable: of equal keys, the last given is last.
        v.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(Text, Text)> = Vec::with_capacity(v.len());
        for (k, val) in v {
            match out.last_mut() {
                Some(last) if last.0 == k => last.1 = val,
                _ => out.push((k, val)),
            }
        }
        Self(out.into_boxed_slice())
    }
}

impl<'a> IntoIterator for &'a Labels {
    type Item = (&'a Text, &'a Text);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Text, Text)>,
        fn(&'a (Text, Text)) -> (&'a Text, &'a Text),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A map, as the API and recordings write labels.
impl Serialize for Labels {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.len()))?;
        for (k, v) in self {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct LabelsVisitor;
        impl<'de> Visitor<'de> for LabelsVisitor {
            type Value = Labels;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of labels")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Labels, A::Error> {
                let mut v = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
                while let Some(entry) = map.next_entry::<Text, Text>()? {
                    v.push(entry);
                }
                Ok(v.into_iter().collect())
            }
        }
        d.deserialize_map(LabelsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Reads, writes and orders as the `BTreeMap` it replaces: a key given twice keeps
    /// its last value, insert returns what it replaced, JSON round-trips.
    #[test]
    fn labels_behave_as_the_map_they_replace() {
        let json = r#"{"spark-role":"executor","b":"1","spark-app-selector":"x","b":"2","a":""}"#;
        let labels: Labels = serde_json::from_str(json).unwrap();
        let map: BTreeMap<Text, Text> = serde_json::from_str(json).unwrap();
        assert_eq!(
            labels.iter().collect::<Vec<_>>(),
            map.iter().collect::<Vec<_>>()
        );
        assert_eq!(labels.get("b").map(Text::as_str), Some("2"));
        assert_eq!(labels.get("c"), None);
        assert!(labels.contains_key("a") && !labels.contains_key("z"));
        assert_eq!(
            serde_json::to_string(&labels).unwrap(),
            serde_json::to_string(&map).unwrap()
        );
        let mut l = labels.clone();
        let mut m = map.clone();
        for (k, v) in [("0", "first"), ("b", "3"), ("zz", "last"), ("m", "mid")] {
            assert_eq!(
                l.insert(k.into(), v.into()),
                m.insert(k.into(), v.into()),
                "{k}"
            );
        }
        assert_eq!(l.iter().collect::<Vec<_>>(), m.iter().collect::<Vec<_>>());
        assert_eq!(l.len(), m.len());
        assert!(Labels::default().is_empty());
        assert!(serde_json::from_str::<Labels>(r#"{"a":1}"#).is_err());
        assert!(serde_json::from_str::<Labels>(r#"["a"]"#).is_err());
    }
}
