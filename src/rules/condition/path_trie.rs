//! Path rules indexed by the components their keys begin with.

use crate::names::FastMap;

/// Path rules by the components of their keys: a rule can hold only for a path that begins with
/// all of them (a `path_within` root, or the literal components a `path_glob` begins with).
#[derive(Debug)]
pub(super) struct PathTrie {
    // `nodes[0]` is `/`; a child always comes after its parent.
    nodes: Vec<TrieNode>,
}

#[derive(Debug, Default)]
struct TrieNode {
    children: FastMap<Box<str>, u32>,
    parent: u32,
    // Positions of the rules whose key ends here.
    own: Vec<u32>,
    // Positions of the rules whose key ends here or above: what a path reaching this node, and
    // no deeper, may meet.
    reached: Vec<u32>,
}

impl Default for PathTrie {
    fn default() -> Self {
        Self {
            nodes: vec![TrieNode::default()],
        }
    }
}

impl PathTrie {
    pub(super) fn insert(&mut self, key: &[Box<str>], position: u32) {
        let mut node = 0_usize;
        for component in key {
            node = match self.nodes[node].children.get(component) {
                Some(&child) => child as usize,
                None => {
                    let child = self.nodes.len();
                    self.nodes.push(TrieNode {
                        parent: node as u32,
                        ..TrieNode::default()
                    });
                    self.nodes[node]
                        .children
                        .insert(component.clone(), child as u32);
                    child
                }
            };
        }
        if self.nodes[node].own.last() != Some(&position) {
            self.nodes[node].own.push(position);
        }
    }

    /// Fills each node's `reached` from its ancestors' (parents come first).
    pub(super) fn seal(&mut self) {
        for index in 0..self.nodes.len() {
            let mut reached = if index == 0 {
                Vec::new()
            } else {
                self.nodes[self.nodes[index].parent as usize]
                    .reached
                    .clone()
            };
            reached.extend_from_slice(&self.nodes[index].own);
            self.nodes[index].reached = reached;
        }
    }

    /// The rules a path with these (normalized) components may meet: those whose key the path
    /// begins with.
    pub(super) fn reached<'t>(&'t self, components: &[std::borrow::Cow<'_, str>]) -> &'t [u32] {
        let mut node = 0_usize;
        for component in components {
            match self.nodes[node].children.get(component.as_ref()) {
                Some(&child) => node = child as usize,
                None => break,
            }
        }
        &self.nodes[node].reached
    }
}
