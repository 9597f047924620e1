log_level = "TRACE"
