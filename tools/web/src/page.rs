// SPDX-License-Identifier: MIT
//! Page descriptions (format `confucius-web-page/1`, see README.md): objects with a domain, a
//! size in bytes and an optional parent. An object without a parent is requested when the load
//! starts; any other object is requested when its parent has fully arrived.

use serde::Deserialize;
use std::collections::HashMap;

pub const FORMAT: &str = "confucius-web-page/1";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPage {
    format: String,
    id: String,
    objects: Vec<RawObject>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObject {
    id: String,
    domain: String,
    size: serde_json::Value,
    parent: Option<String>,
}

#[derive(Debug)]
pub struct Object {
    pub id: String,
    pub domain: usize,
    pub size: u64,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
}

#[derive(Debug)]
pub struct Page {
    pub id: String,
    /// Distinct domains, in order of first appearance.
    pub domains: Vec<String>,
    pub objects: Vec<Object>,
}

impl Page {
    pub fn read(path: &str) -> Result<Page, String> {
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("cannot read page {path}: {e}"))?;
        Page::parse(&text).map_err(|e| format!("{path}: {e}"))
    }

    pub fn parse(text: &str) -> Result<Page, String> {
        let raw: RawPage =
            serde_json::from_str(text).map_err(|e| format!("not a page description: {e}"))?;
        if raw.format != FORMAT {
            return Err(format!("format is {:?}, expected {FORMAT:?}", raw.format));
        }
        if raw.objects.is_empty() {
            return Err("the page has no objects".to_string());
        }
        let index = index_ids(&raw.objects)?;
        let mut domains: Vec<String> = Vec::new();
        let mut objects = Vec::with_capacity(raw.objects.len());
        for object in &raw.objects {
            objects.push(Object {
                id: object.id.clone(),
                domain: intern_domain(&mut domains, object)?,
                size: read_size(object)?,
                parent: parent_index(&index, object)?,
                children: Vec::new(),
            });
        }
        for i in 0..objects.len() {
            if let Some(p) = objects[i].parent {
                objects[p].children.push(i);
            }
        }
        check_acyclic(&objects)?;
        Ok(Page {
            id: raw.id,
            domains,
            objects,
        })
    }

    pub fn roots(&self) -> impl Iterator<Item = usize> + '_ {
        self.objects
            .iter()
            .enumerate()
            .filter(|(_, o)| o.parent.is_none())
            .map(|(i, _)| i)
    }
}

fn index_ids(objects: &[RawObject]) -> Result<HashMap<&str, usize>, String> {
    let mut index = HashMap::new();
    for (i, object) in objects.iter().enumerate() {
        if object.id.is_empty() {
            return Err(format!("object #{i} has an empty id"));
        }
        if index.insert(object.id.as_str(), i).is_some() {
            return Err(format!("object id {:?} appears twice", object.id));
        }
    }
    Ok(index)
}

fn intern_domain(domains: &mut Vec<String>, object: &RawObject) -> Result<usize, String> {
    let name = object.domain.to_ascii_lowercase();
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c == '/') {
        return Err(format!(
            "object {:?}: domain {:?} is not a host name",
            object.id, object.domain
        ));
    }
    Ok(match domains.iter().position(|d| *d == name) {
        Some(i) => i,
        None => {
            domains.push(name);
            domains.len() - 1
        }
    })
}

fn read_size(object: &RawObject) -> Result<u64, String> {
    object.size.as_u64().ok_or_else(|| {
        format!(
            "object {:?}: size must be a whole number of bytes >= 0, got {}",
            object.id, object.size
        )
    })
}

fn parent_index(index: &HashMap<&str, usize>, object: &RawObject) -> Result<Option<usize>, String> {
    match &object.parent {
        None => Ok(None),
        Some(parent) => match index.get(parent.as_str()) {
            Some(&p) => Ok(Some(p)),
            None => Err(format!("object {:?}: unknown parent {parent:?}", object.id)),
        },
    }
}

/// Every object must descend from a root; an object that does not sits on a cycle (or below one).
fn check_acyclic(objects: &[Object]) -> Result<(), String> {
    let mut reached = vec![false; objects.len()];
    let mut stack: Vec<usize> = (0..objects.len())
        .filter(|&i| objects[i].parent.is_none())
        .collect();
    if stack.is_empty() {
        return Err("no object without a parent: the dependencies form a cycle".to_string());
    }
    while let Some(i) = stack.pop() {
        reached[i] = true;
        stack.extend(&objects[i].children);
    }
    match reached.iter().position(|r| !r) {
        None => Ok(()),
        Some(i) => Err(format!(
            "object {:?} is on a dependency cycle (or below one)",
            objects[i].id
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::Page;

    fn page(objects: &str) -> Result<Page, String> {
        Page::parse(&format!(
            r#"{{"format": "confucius-web-page/1", "id": "t", "objects": [{objects}]}}"#
        ))
    }

    #[test]
    fn reads_a_tree() {
        let p = page(
            r#"{"id":"a","domain":"X.test","size":10,"parent":null},
                        {"id":"b","domain":"y.test","size":0,"parent":"a"},
                        {"id":"c","domain":"x.test","size":5,"parent":"a"}"#,
        )
        .unwrap();
        assert_eq!(p.domains, vec!["x.test", "y.test"]);
        assert_eq!(p.objects[0].children, vec![1, 2]);
        assert_eq!(p.roots().collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn rejects_bad_pages() {
        let cycle = page(
            r#"{"id":"r","domain":"x","size":1,"parent":null},
                           {"id":"a","domain":"x","size":1,"parent":"b"},{"id":"b","domain":"x","size":1,"parent":"a"}"#,
        );
        assert!(cycle.unwrap_err().contains("cycle"));
        assert!(page(r#"{"id":"a","domain":"x","size":-3,"parent":null}"#)
            .unwrap_err()
            .contains("size"));
        assert!(page(r#"{"id":"a","domain":"x","size":1,"parent":"zz"}"#)
            .unwrap_err()
            .contains("unknown parent"));
        assert!(page(r#"{"id":"a","domain":"x","size":1,"parent":null},{"id":"a","domain":"x","size":1,"parent":null}"#)
            .unwrap_err()
            .contains("twice"));
        assert!(page("").unwrap_err().contains("no objects"));
        assert!(Page::parse("{not json").unwrap_err().contains("not a page"));
    }
}
