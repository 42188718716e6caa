"""Sphinx extension: what the browser suite (tests/browser) found wrong with every built
page.

- Inline scripts added twice. Under Sphinx 7.4, the inline configuration scripts that
  sphinx-thebe and sphinx-togglebutton add when the environment starts reading are
  emitted twice in every page's head; thebe's declares ``const THEBE_JS_URL``, so the
  second copy throws "Identifier 'THEBE_JS_URL' has already been declared" on every
  page. Repeated scripts are dropped here, keeping the first.
- Widget state of hidden widgets. Interactive cells execute on build with their output
  removed (``remove-output``; the site shows a static counterpart), but nbclient still
  stores the widgets' state in the notebook, so myst-nb embeds that state in the page (a
  rendered figure included) and loads require.js and the ipywidgets HTML manager from
  public CDNs: downloads that fail offline and render nothing. This book never shows a
  live widget on the static site, so both are dropped.
- Node visitors of the single-page build (``make print``). Sphinx looks up the visitors
  of extension nodes by builder name first and falls back to the format ("html") only
  when no extension registered any for that name; one extension registers a visitor
  for ``singlehtml``, so myst-nb's hidden-code node, registered for "html", has none
  there and the build fails. The "html" visitors are merged into every builder of the
  html format that has its own.
"""

from __future__ import annotations

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _key(script) -> tuple:
    # The builder's copy of an inline script has filename None, the registry's copy "".
    return (
        getattr(script, "filename", script) or "",
        tuple(sorted(getattr(script, "attributes", {}).items())),
    )


def clean_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        key = _key(script)
        if key in seen or getattr(script, "attributes", {}).get("type") == WIDGET_STATE:
            continue
        seen.add(key)
        kept.append(script)
    context["script_files"] = kept


def no_widget_javascript(app, config):
    config.nb_ipywidgets_js = {}


def html_visitors_everywhere(app) -> None:
    """Give every html-format builder with visitors of its own the "html" ones too."""
    handlers = app.registry.translation_handlers
    if app.builder.format == "html" and app.builder.name in handlers:
        handlers[app.builder.name] = {
            **handlers.get("html", {}),
            **handlers[app.builder.name],
        }


def setup(app):
    app.connect("builder-inited", html_visitors_everywhere)
    app.connect("config-inited", no_widget_javascript, priority=900)
    app.connect("html-page-context", clean_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
