// SPDX-License-Identifier: MIT
//! The domain -> address mapping, written like /etc/hosts: `ADDRESS NAME [NAME...]` per line,
//! `#` starts a comment. Both programs read the same file: the client to find a domain's
//! server, the server to know which addresses to listen on.

use std::collections::HashMap;
use std::net::IpAddr;

#[derive(Debug, Default)]
pub struct Hosts {
    by_name: HashMap<String, IpAddr>,
    addresses: Vec<IpAddr>,
}

impl Hosts {
    pub fn read(path: &str) -> Result<Hosts, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read hosts file {path}: {e}"))?;
        Hosts::parse(&text).map_err(|e| format!("{path}: {e}"))
    }

    pub fn parse(text: &str) -> Result<Hosts, String> {
        let mut hosts = Hosts::default();
        for (index, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("");
            let mut fields = line.split_whitespace();
            let Some(first) = fields.next() else { continue };
            let address: IpAddr = first
                .parse()
                .map_err(|_| format!("line {}: {first:?} is not an IP address", index + 1))?;
            let names: Vec<&str> = fields.collect();
            if names.is_empty() {
                return Err(format!("line {}: address {address} has no name", index + 1));
            }
            for name in names {
                let key = name.to_ascii_lowercase();
                if let Some(previous) = hosts.by_name.insert(key, address) {
                    if previous != address {
                        return Err(format!(
                            "line {}: {name} is mapped to both {previous} and {address}",
                            index + 1
                        ));
                    }
                }
            }
            if !hosts.addresses.contains(&address) {
                hosts.addresses.push(address);
            }
        }
        Ok(hosts)
    }

    pub fn lookup(&self, name: &str) -> Option<IpAddr> {
        self.by_name.get(&name.to_ascii_lowercase()).copied()
    }

    /// Every distinct address, in the order the file first names it.
    pub fn addresses(&self) -> &[IpAddr] {
        &self.addresses
    }
}

#[cfg(test)]
mod tests {
    use super::Hosts;

    #[test]
    fn reads_names_comments_and_case() {
        let hosts =
            Hosts::parse("# lab\n10.0.0.1 a.test B.test\n\n10.0.0.2 c.test # third\n").unwrap();
        assert_eq!(hosts.lookup("b.TEST"), Some("10.0.0.1".parse().unwrap()));
        assert_eq!(hosts.lookup("c.test"), Some("10.0.0.2".parse().unwrap()));
        assert_eq!(hosts.lookup("d.test"), None);
        assert_eq!(hosts.addresses().len(), 2);
    }

    #[test]
    fn rejects_bad_lines() {
        assert!(Hosts::parse("10.0.0.300 a.test\n")
            .unwrap_err()
            .contains("line 1"));
        assert!(Hosts::parse("10.0.0.1\n").unwrap_err().contains("no name"));
        assert!(Hosts::parse("10.0.0.1 a\n10.0.0.2 a\n")
            .unwrap_err()
            .contains("both"));
    }
}
