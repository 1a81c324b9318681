"""Pure builders for the dashboard (frames, figures, view state, targets, diagnosis, report); never imports streamlit."""
