#!/usr/bin/env python3
"""Every citation of a section of a Markdown page names a heading that page has.

    scripts/check-doc-sections.py REPO

A citation is a page followed by a quoted title: `README "Two commands"`,
`docs/operations.md, "Draining"`, `(docs/protocol.md, "Errors")`, `webhooks.md ("Retries")`,
even across a line break inside a comment. A bare `README` is the repository's README.md; a
bare `name.md` is the page next to the citing file, else that name under docs/. The first quoted title
must be a heading of that page (backticks ignored). Tracked files only, node_modules skipped.
Prints each broken citation as file:line and exits 1 when there is one.
"""
import os
import re
import subprocess
import sys

PAGE = r'((?:[\w.-]+/)*(?:README(?:\.md)?|[\w-]+\.md))'
# between the page and the title: a comma or colon, an opening parenthesis, and whitespace
# that may cross a line and its comment marker (#, //, *, --).
GAP = r'(?:[,:]?[ \t]*\(?[ \t]*(?:\n[ \t]*(?:#|//|\*|--)?[ \t]*)?)'
# the title may go on across one line break (and the comment marker of the next line)
CITE = re.compile(PAGE + GAP +
                  r'"([A-Za-z0-9`][^"\n]{0,79}(?:\n[ \t]*(?:#|//|\*|--)?[ \t]*[^"\n]{1,79})?)"')
WRAP = re.compile(r'\s*\n[ \t]*(?:#|//|\*|--)?[ \t]*')
HEADING = re.compile(r'^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$', re.M)
# a paragraph or list item opening with a bold label ("**Rotating secrets.**") is a section too
BOLD = re.compile(r'^[ \t]*(?:[-*][ \t]+)?\*\*([^*\n]{2,80}?)\.?\*\*', re.M)


def headings(path, cache={}):
    if path not in cache:
        try:
            text = open(path, encoding='utf-8').read()
        except OSError:
            cache[path] = None
            return None
        # fenced code blocks hold shell comments, not headings
        text = re.sub(r'^[ \t]*```.*?^[ \t]*```', '', text, flags=re.M | re.S)
        titles = HEADING.findall(text) + BOLD.findall(text)
        cache[path] = {norm(h) for h in titles}
    return cache[path]


def norm(title):
    return WRAP.sub(' ', title).replace('`', '').strip().rstrip('.').lower()


def cited(title, heads):
    """The title is a heading, or the start of one up to a word boundary ("Administration"
    for "Administration: the admin API")."""
    return any(h == title or (h.startswith(title) and not h[len(title)].isalnum())
               for h in heads)


def resolve(repo, citing, page):
    if page in ('README', 'README.md'):
        return os.path.join(repo, 'README.md')
    if not page.endswith('.md'):
        page += '.md'
    for base in (os.path.dirname(citing), repo, os.path.join(repo, 'docs')):
        cand = os.path.normpath(os.path.join(base, page))
        if os.path.isfile(cand):
            return cand
    return None


def main():
    repo = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else '.')
    files = subprocess.run(['git', '-C', repo, 'ls-files'], capture_output=True, text=True,
                           check=True).stdout.split('\n')
    bad = checked = 0
    for rel in files:
        if not rel or 'node_modules/' in rel or rel.endswith(('.png', '.json.gz', '.lock')):
            continue
        path = os.path.join(repo, rel)
        try:
            text = open(path, encoding='utf-8').read()
        except (OSError, UnicodeDecodeError):
            continue
        for m in CITE.finditer(text):
            target = resolve(repo, path, m.group(1))
            if target is None:
                continue  # a page that does not exist is test_doc_citations' finding
            heads = headings(target)
            checked += 1
            if not cited(norm(m.group(2)), heads):
                line = text.count('\n', 0, m.start()) + 1
                print(f'{rel}:{line}: {os.path.relpath(target, repo)} has no section '
                      f'"{m.group(2)}"')
                bad += 1
    print(f'{checked} section citations, {bad} broken')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
