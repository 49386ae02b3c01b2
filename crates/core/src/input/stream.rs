//! A JSON document read with its `items` taken one at a time: each item that names its own
//! kind is turned into a pod or an event as soon as it is parsed and its JSON value
//! dropped, so a List of 100,000 pods never exists as 100,000 values at once. Items without
//! a kind (a raw API PodList or EventList) depend on the list's kind, which kubectl prints
//! after `items`: they are kept and read once the document is complete.

use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{Objects, read_item};

/// Reads one document; returns it without the items already read (`deferred` gets those
/// without a kind, with their 1-based position).
pub(super) struct DocSeed<'a> {
    pub out: &'a mut Objects,
    pub deferred: &'a mut Vec<(usize, Value)>,
    pub label: &'a str,
}

impl<'de> DeserializeSeed<'de> for DocSeed<'_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DocSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object or list")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut head = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" && !head.contains_key("items") {
                let taken = map.next_value_seed(ItemsSeed {
                    out: &mut *self.out,
                    deferred: &mut *self.deferred,
                    label: self.label,
                })?;
                // Not a list (`"items": {…}`): kept as it was, for the caller to report.
                head.insert(key, taken.unwrap_or_else(|| Value::Array(Vec::new())));
            } else {
                let v: Value = map.next_value()?;
                head.insert(key, v);
            }
        }
        Ok(Value::Object(head))
    }

    // Anything else is a whole document that is not an object: keep it as it is.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut all = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            all.push(v);
        }
        Ok(Value::Array(all))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// The `items` array: `Some(rest)` where `rest` is what is not read yet (nothing: every
/// item was read or deferred), or the value itself when it is not an array.
struct ItemsSeed<'a> {
    out: &'a mut Objects,
    deferred: &'a mut Vec<(usize, Value)>,
    label: &'a str,
}

impl<'de> DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = Option<Value>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Value>, A::Error> {
        let mut n = 0;
        while let Some(item) = seq.next_element::<Value>()? {
            n += 1;
            if item.get("kind").is_some() {
                let label = format!("{} item {n}", self.label);
                read_item(item, false, None, &label, self.out);
            } else {
                self.deferred.push((n, item));
            }
        }
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Option<Value>, E> {
        Ok(Some(Value::Null))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Some(Value::Object(Map::new())))
    }
    fn visit_str<E>(self, _: &str) -> Result<Option<Value>, E> {
        Ok(Some(Value::String(String::new())))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Option<Value>, E> {
        Ok(Some(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Option<Value>, E> {
        Ok(Some(Value::from(v)))
    }
}
