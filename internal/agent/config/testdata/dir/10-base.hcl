data_dir  = "/var/lib/drover"
log_level = "INFO"
server {
  enabled   = true
  retry_join = ["a"]
}
client {
  enabled = true
  meta {
    zone = "a"
    rack = "1"
  }
}
