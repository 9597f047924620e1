server {
  enabled          = true
  bootstrap_expect = "three"
  heartbeat_grace  = 10
}
ports {
  http = "eighty"
}
