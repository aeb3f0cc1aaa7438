// regfile: a register file of 2**ADDR_W words of WIDTH bits, one synchronous write port and two
// asynchronous read ports (a CPU's rs1/rs2), word 0 reads as zero and ignores writes (RISC-V
// x0). Yosys infers a memory with two read ports. Written for the issue-17 corpus (wide read
// multiplexers on a flop array).
module regfile #(
    parameter WIDTH = 8,
    parameter ADDR_W = 3
) (
    input  wire              clk,
    input  wire              we,
    input  wire [ADDR_W-1:0] waddr,
    input  wire [WIDTH-1:0]  wdata,
    input  wire [ADDR_W-1:0] raddr1,
    output wire [WIDTH-1:0]  rdata1,
    input  wire [ADDR_W-1:0] raddr2,
    output wire [WIDTH-1:0]  rdata2
);
    reg [WIDTH-1:0] regs [1:(1 << ADDR_W) - 1];

    always @(posedge clk)
        if (we && waddr != 0) regs[waddr] <= wdata;

    assign rdata1 = (raddr1 == 0) ? {WIDTH{1'b0}} : regs[raddr1];
    assign rdata2 = (raddr2 == 0) ? {WIDTH{1'b0}} : regs[raddr2];
endmodule
