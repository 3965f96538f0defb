"""One widget per pane (heatmaps, loss plot, form, code, inspector, ...) and the helpers they
share (fonts, fitting text, paced repaints, themes, export). Views draw from the session's
signals and call its methods; they never start workers themselves."""
