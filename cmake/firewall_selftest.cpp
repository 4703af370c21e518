// Compiled only with -DTENSORSCOPE_FIREWALL_SELFTEST=ON, whose configure step must fail.
int tensorscopeFirewallSelftest() { return 0; }
