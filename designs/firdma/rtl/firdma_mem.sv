// firdma buffer memory: one write port, one read port with a registered (next-cycle) read.
// MEM_STYLE "flop": a register array. MEM_STYLE "macro": DATA_W/32 side-by-side
// sky130_sram_2kbyte_1rw1r_32x512_8 macros (port 0 writes, port 1 reads); DEPTH must be 512.
`default_nettype none
module firdma_mem #(
    parameter int W = 32,
    parameter int DEPTH = 512,
    parameter logic [39:0] MEM_STYLE = "flop"
) (
    input  wire                     clk,
    input  wire                     we,
    input  wire [$clog2(DEPTH)-1:0] waddr,
    input  wire [W-1:0]             wdata,
    input  wire                     re,
    input  wire [$clog2(DEPTH)-1:0] raddr,
    output wire [W-1:0]             rdata
);
    generate
        if (MEM_STYLE == "macro") begin : g_macro
            for (genvar i = 0; i < W / 32; i++) begin : g_bank
                wire [31:0] unused_dout0;
                sky130_sram_2kbyte_1rw1r_32x512_8 u_sram (
                    .clk0  (clk),
                    .csb0  (~we),
                    .web0  (1'b0),
                    .wmask0(4'hF),
                    .addr0 (9'(waddr)),
                    .din0  (wdata[i*32 +: 32]),
                    .dout0 (unused_dout0),
                    .clk1  (clk),
                    .csb1  (~re),
                    .addr1 (9'(raddr)),
                    .dout1 (rdata[i*32 +: 32])
                );
            end
        end else begin : g_flop
            reg [W-1:0] mem [DEPTH];
            reg [W-1:0] rdata_q;
            always_ff @(posedge clk) begin
                if (we) mem[waddr] <= wdata;
                if (re) rdata_q <= mem[raddr];
            end
            assign rdata = rdata_q;
        end
    endgenerate
endmodule
`default_nettype wire
