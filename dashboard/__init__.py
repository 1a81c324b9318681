"""The ragmetrics dashboard: ``streamlit run dashboard/app.py``."""
