"""The app's stylesheet: the classes app/views/trace.py and the tabs put on their HTML."""

CSS = """
.fe-table { border-collapse: collapse; width: 100%; font-size: 0.9em; }
.fe-table th, .fe-table td { border-bottom: 1px solid #ddd; padding: 4px 6px;
  vertical-align: top; text-align: left; }
.fe-stage { margin: 10px 0 4px; }
mark { background: #fff3b0; padding: 0 1px; }
mark.gold { background: #f6c343; font-weight: bold; }
.fe-badge { border-radius: 4px; padding: 0 4px; font-size: 0.8em; color: white;
            white-space: nowrap; }
.fe-answer { background: #b8860b; } .fe-support { background: #4c78a8; }
.fe-kept-badge { background: #2e7d32; } .fe-dropped { background: #9e9e9e; }
.fe-self { background: #6c757d; }  /* a judged question's own document */
.fe-lost { background: #fde2e1; border-left: 4px solid #d9534f; padding: 6px 10px; }
.fe-ablation tr.fe-changed td { background: #fde2e1; }
.fe-kept { background: #e3f4e1; border-left: 4px solid #5cb85c; padding: 6px 10px; }
/* Compare's final passages: as many columns as fit (five at 1,216 px), long words wrap */
.fe-final-columns { display: grid; gap: 16px;
  grid-template-columns: repeat(auto-fit, minmax(200px, 1fr)); }
.fe-final-column { min-width: 0; overflow-wrap: anywhere; }
.fe-progress { background: #e8f0fb; border-left: 4px solid #4c78a8; padding: 6px 10px; }
/* Explore's run under way: a turning ring before the words */
.fe-running { background: #e8f0fb; border-left: 4px solid #4c78a8; padding: 6px 10px; }
.fe-running::before { content: ""; display: inline-block; width: 0.8em; height: 0.8em;
  margin-right: 8px; vertical-align: -1px; border: 2px solid #4c78a8;
  border-right-color: transparent; border-radius: 50%; animation: fe-turn 0.8s linear infinite; }
@keyframes fe-turn { to { transform: rotate(360deg); } }
/* Gradio fades an output while its event is pending: the notice that says so stays clear */
#fe-notice .pending { opacity: 1; }
.fe-error { background: #fff4e5; border-left: 4px solid #f0ad4e; padding: 6px 10px; }
.fe-answer-box { font-size: 1.05em; padding: 6px 0; }
.fe-prompt { white-space: pre-wrap; max-height: 300px; overflow-y: auto; font-size: 0.85em; }
/* Diagnose's paired differences: those within noise greyed, real ones bold */
.fe-noise td { color: #888; }
.fe-real td:nth-child(4), .fe-real td:nth-child(7) { font-weight: bold; }
.fe-failed { color: #c62828; }
/* the status box: one line, worst news first, cut with an ellipsis; opened, its lines
   scroll within a third of the screen, so the tabs stay in view */
#fe-status button.label-wrap > span:first-child { white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; min-width: 0; flex: 1; text-align: left; }
#fe-status.fe-status-failed { border-left: 4px solid #c62828; }
#fe-status.fe-status-failed button.label-wrap > span:first-child { color: #c62828; }
#fe-status .fe-status-lines { max-height: 33vh; overflow-y: auto; margin: 0; }
/* a long tab's contents line (app.tabs.contents): at the top of the screen as the page
   scrolls; a view its links lead to comes to rest under it, not behind it */
.block.fe-contents { position: sticky; top: 0; z-index: 50; padding: 4px 0;
  background: var(--body-background-fill); border-bottom: 1px solid var(--border-color-primary); }
.fe-contents-links { font-size: 0.95em; }
.fe-contents-links a { margin: 0 4px; }
[id^="fe-"] { scroll-margin-top: 56px; }
/* Gradio's container hides its overflow, which makes it the scroller a sticky line sticks
   in (never scrolled: the line went up with the page); clipped, the page is the scroller */
.gradio-container { overflow: clip !important; }
.fe-yes { color: #2e7d32; font-weight: bold; } .fe-no { color: #c62828; font-weight: bold; }
/* Judge: a unit's text and its whole document keep their paragraphs; the grade keys stay
   one line each, however long their label */
.fe-judge-text { white-space: pre-wrap; }
.fe-judge-whole .fe-judge-text { max-height: 60vh; overflow-y: auto; }
[id^="fe-judge-"] button, button[id^="fe-judge-"] { white-space: nowrap; }
"""
