"""The dashboard's Streamlit glue: caching, URL/session state, pickers, uploads, page layout."""
