data_dir = "/var/lib/drover"
server { enabled = true }
acl {
  enabled = true
}
