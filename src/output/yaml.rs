//! YAML to stdout (`-o yaml`, as kubectl has it), safe for a terminal: a control character
//! from cluster data is written visibly (`\u{1b}`), never raw.

use serde::Serialize;

use crate::failure::Failure;
use crate::redact;

/// `value` as YAML.
pub(crate) fn to_string<T: Serialize>(value: &T) -> Result<String, Failure> {
    let text = serde_saphyr::to_string(value)
        .map_err(|e| Failure::Runtime(format!("cannot write YAML: {e}")))?;
    Ok(redact::escape_controls(&text).into_owned())
}
